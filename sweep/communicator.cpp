#include "sweep/communicator.hpp"

#include "core/error.hpp"

#include <cstdlib>

namespace hetsim::sweep {

#ifdef HETSIM_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator(); // mpi_communicator.cpp
bool mpi_available() { return true; }
#else
bool mpi_available() { return false; }
#endif

namespace {

class SingleProcess final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  std::string broadcast(const std::string& value) override { return value; }
};

/// Launchers announce themselves in the environment: Open MPI, MPICH/Hydra, PMIx.
bool launched_by_mpi()
{
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

} // namespace

std::unique_ptr<Communicator> make_communicator()
{
  if (!launched_by_mpi())
    return std::make_unique<SingleProcess>();
#ifdef HETSIM_WITH_MPI
  return make_mpi_communicator();
#else
  throw BackendUnavailable("sweep: started by an MPI launcher, but this hetsim was built without MPI (install "
                           "libopenmpi-dev and rebuild), so every process would run the whole sweep");
#endif
}

} // namespace hetsim::sweep
