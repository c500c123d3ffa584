#pragma once
/// A process started as one rank of a run: who it is, from the launcher's environment, and where it meets the
/// other ranks.

#include <optional>
#include <string>

namespace hetsim::exec {

struct RankIdentity {
  int rank                 = 0;
  int world_size           = 1;
  bool from_local_launcher = false;
  /// The launcher's id of this run, the same in every rank (Open MPI/PMIx job, Slurm job step); empty when the
  /// launcher names none, or for the local launcher, whose rendezvous directory is already fresh.
  std::string job;
};

/// This process's rank and the world size when it runs as a rank: set by the local launcher (HETSIM_RANK,
/// HETSIM_WORLD_SIZE), mpirun (OMPI_COMM_WORLD_RANK/SIZE), PMI (PMI_RANK/SIZE) or srun (SLURM_PROCID,
/// SLURM_NTASKS). Empty otherwise. Throws InputError for a malformed value.
std::optional<RankIdentity> rank_from_environment();

/// Where this run's ranks meet: `store_dir/job-<id>` when the launcher names the run, so that runs given the
/// same --store-dir never read each other's files, else `store_dir` itself. Created when missing; throws
/// InputError when it cannot be.
std::string rendezvous_dir(const std::string& store_dir, const RankIdentity& identity);

} // namespace hetsim::exec
