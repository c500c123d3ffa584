#include "exec/cpu_quota.hpp"

#include "core/error.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hetsim::exec {
namespace {

namespace fs = std::filesystem;

/// A short period keeps a rank's throttled spells (when it has used its share) to a few milliseconds, so its
/// communication threads are never held back for long.
constexpr long kPeriodMicroseconds = 5000;

void write_file(const fs::path& file, const std::string& text)
{
  std::ofstream out(file);
  out << text;
  out.close();
  if (!out)
    throw InputError("--cpus-per-rank: cannot write '" + text + "' to " + file.string() + ": " +
                     std::strerror(errno));
}

bool cgroup_v2_has_cpu(const fs::path& root)
{
  std::ifstream in(root / "cgroup.controllers");
  std::string controller;
  while (in >> controller)
    if (controller == "cpu")
      return true;
  return false;
}

} // namespace

CpuQuota::CpuQuota(double cpus_per_rank, int ranks) : ranks_(ranks)
{
  if (!(cpus_per_rank > 0) || !std::isfinite(cpus_per_rank))
    throw InputError("--cpus-per-rank: expected a positive number of CPUs, got " + std::to_string(cpus_per_rank));
  const long quota = std::max(1000L, std::lround(cpus_per_rank * kPeriodMicroseconds));
  const std::string name = "hetsim-" + std::to_string(::getpid());
  const fs::path v1      = "/sys/fs/cgroup/cpu";
  const fs::path v2      = "/sys/fs/cgroup";
  const bool use_v1      = fs::exists(v1 / "cpu.cfs_quota_us");
  if (!use_v1 && !cgroup_v2_has_cpu(v2))
    throw InputError("--cpus-per-rank: this machine has no cgroup cpu controller (neither " + v1.string() +
                     "/cpu.cfs_quota_us nor cpu in " + (v2 / "cgroup.controllers").string() + ")");
  root_ = ((use_v1 ? v1 : v2) / name).string();
  std::error_code error;
  if (!fs::create_directory(root_, error))
    throw InputError("--cpus-per-rank: cannot create the cgroup " + root_ + ": " +
                     (error ? error.message() : "it exists"));
  try {
    if (!use_v1)
      write_file(fs::path(root_) / "cgroup.subtree_control", "+cpu");
    for (int r = 0; r < ranks; ++r) {
      const fs::path group = fs::path(root_) / ("rank" + std::to_string(r));
      fs::create_directory(group);
      if (use_v1) {
        write_file(group / "cpu.cfs_period_us", std::to_string(kPeriodMicroseconds));
        write_file(group / "cpu.cfs_quota_us", std::to_string(quota));
      } else {
        write_file(group / "cpu.max", std::to_string(quota) + " " + std::to_string(kPeriodMicroseconds));
      }
    }
  } catch (...) {
    remove_groups();
    throw;
  }
}

CpuQuota::~CpuQuota()
{
  remove_groups();
}

void CpuQuota::remove_groups() const
{
  std::error_code ignored;
  for (int r = 0; r < ranks_; ++r)
    fs::remove(fs::path(root_) / ("rank" + std::to_string(r)), ignored); // rmdir: empty once its processes exited
  fs::remove(root_, ignored);
}

void CpuQuota::add(int rank, pid_t pid) const
{
  write_file(fs::path(root_) / ("rank" + std::to_string(rank)) / "cgroup.procs", std::to_string(pid));
}

} // namespace hetsim::exec
