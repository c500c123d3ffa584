/// The MPI communicator of sweeps (built only where CMake finds MPI).

#include "sweep/communicator.hpp"

#include "core/sanitizers.hpp"

#include <mpi.h>

#include <atomic>

namespace {
std::atomic<bool> g_mpi_initialized{false};
} // namespace

#ifdef HETSIM_ADDRESS_SANITIZER
/// LeakSanitizer's hook: no leak check at exit in a process that initialised MPI. OpenMPI does not free much of
/// what MPI_Init allocates (its own valgrind suppressions say so), and it unloads the plugins that allocated it
/// before the check, so those leaks cannot be told from ours or suppressed by name. ASan's other checks stay on,
/// and the same sweeps run without MPI are leak-checked.
extern "C" int __lsan_is_turned_off() { return g_mpi_initialized.load() ? 1 : 0; }
#endif

namespace hetsim::sweep {
namespace {

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator()
  {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      MPI_Init(nullptr, nullptr);
    g_mpi_initialized = true;
    owns_             = !initialized;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override
  {
    if (owns_)
      MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> gather(const std::string& mine) override
  {
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(rank_ == 0 ? size_ : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank_ == 0) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        offsets[r] = total;
        total += lengths[r];
      }
      all.resize(total);
    }
    MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    std::vector<std::string> parts;
    for (int r = 0; r < static_cast<int>(lengths.size()); ++r)
      parts.push_back(all.substr(offsets[r], lengths[r]));
    return parts;
  }

  std::string broadcast(const std::string& value) override
  {
    int length = static_cast<int>(value.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string out = rank_ == 0 ? value : std::string(length, '\0');
    MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    return out;
  }

private:
  int rank_ = 0, size_ = 1;
  bool owns_ = false;
};

} // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

} // namespace hetsim::sweep
