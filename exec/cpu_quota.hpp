#pragma once
/// A CPU limit per rank, for emulated clusters whose ranks share one machine. Each rank process runs in a cgroup
/// of its own with a CFS bandwidth quota of `cpus` CPUs, so that it computes at the same speed whether the other
/// ranks are computing or waiting, as separate devices do. Without it, four ranks on two cores compute twice as
/// fast in a pipeline bubble as in data-parallel lockstep, and no calibration can describe both.

#include <string>
#include <sys/types.h>

namespace hetsim::exec {

class CpuQuota {
public:
  /// Creates one cgroup per rank under the cgroup v1 cpu controller (/sys/fs/cgroup/cpu) or, failing that,
  /// cgroup v2 (/sys/fs/cgroup with the cpu controller). Throws InputError naming what is missing when neither
  /// is writable here.
  CpuQuota(double cpus_per_rank, int ranks);
  /// Removes the cgroups; call once their processes have exited.
  ~CpuQuota();
  CpuQuota(const CpuQuota&)            = delete;
  CpuQuota& operator=(const CpuQuota&) = delete;

  /// Moves process `pid` (all its threads) into rank `rank`'s cgroup.
  void add(int rank, pid_t pid) const;

private:
  void remove_groups() const;

  std::string root_; ///< this launch's cgroup directory; rank r's is root_/rank<r>
  int ranks_ = 0;
};

} // namespace hetsim::exec
