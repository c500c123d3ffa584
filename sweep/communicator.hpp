#pragma once
/// How a sweep shares its cells between processes: alone, or as the ranks of an MPI job (`mpirun -np N`).
/// The MPI implementation is compiled only where CMake finds MPI; elsewhere a run under mpirun is refused
/// rather than letting N processes each write the whole sweep.

#include <memory>
#include <string>
#include <vector>

namespace hetsim::sweep {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Every rank's `mine`, in rank order, on rank 0; an empty list elsewhere.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  /// Rank 0's `value` on every rank.
  virtual std::string broadcast(const std::string& value) = 0;
};

/// MPI when this process was started by an MPI launcher (and MPI is part of the build), otherwise a
/// single-process communicator. Throws BackendUnavailable under a launcher in a build without MPI.
std::unique_ptr<Communicator> make_communicator();

/// Whether this build has the MPI communicator.
bool mpi_available();

} // namespace hetsim::sweep
