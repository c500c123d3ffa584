#include "exec/run_space.hpp"

#include "core/error.hpp"
#include "strategies/lowering/task_kernels.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

namespace hetsim::exec {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kBlockBytes        = 4096; // ext4's and tmpfs's allocation unit on x86-64
constexpr std::uintmax_t kAddressBytes      = 136;  // gloo/transport/tcp/address.h: sockaddr_storage + ssize_t
constexpr std::uintmax_t kLivenessFiles     = 4;    // liveness.cpp: alive (and its .tmp), done, failed
constexpr std::uintmax_t kBytesPerEvent     = 512;  // about 200 written per event; see the header
constexpr std::uintmax_t kEventsPerTask     = 3;    // its slice, a memory sample, a flow arrow's end
constexpr std::uintmax_t kReportBytes       = 1 << 20;

std::uintmax_t blocks(std::uintmax_t bytes)
{
  return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
}

/// A context of `members` ranks: one key file per member, each with every member's address.
std::uintmax_t context_bytes(std::uintmax_t members)
{
  return members * blocks(members * kAddressBytes);
}

std::string mebibytes(std::uintmax_t bytes)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

} // namespace

std::uintmax_t rendezvous_bytes(const strategies::Schedule& schedule)
{
  const auto ranks = static_cast<std::uintmax_t>(schedule.queues.size());
  std::uintmax_t bytes = 3 * context_bytes(ranks) + ranks * kLivenessFiles * kBlockBytes + kBlockBytes;
  std::set<std::pair<int, std::vector<int>>> groups;
  for (const auto& collective : schedule.collectives)
    if (collective.devices.size() >= 2 &&
        groups.emplace(static_cast<int>(schedule.tasks[collective.tasks.front()].stream), collective.devices).second)
      bytes += context_bytes(collective.devices.size());
  return bytes;
}

std::uintmax_t trace_bytes(const Workload& workload)
{
  const strategies::Schedule& s = *workload.schedule;
  std::uintmax_t events         = kEventsPerTask * s.tasks.size();
  if (workload.time_kernels)
    for (const auto& task : s.tasks)
      events += strategies::task_kernels(task, *workload.model, s.tp, workload.scale, s.ep, s.sequence_parallel, s.cp)
                    .size();
  return 2 * events * kBytesPerEvent + kReportBytes; // the ranks' traces, then the merged one as large
}

void require_free_space(const std::string& dir, std::uintmax_t bytes, const std::string& what)
{
  std::error_code error;
  const fs::space_info space = fs::space(dir, error);
  if (error)
    throw InputError(what + " " + dir + ": cannot tell its free space: " + error.message());
  if (space.available < bytes)
    throw InputError(what + " " + dir + ": " + mebibytes(space.available) + " free, the run writes about " +
                     mebibytes(bytes) + " there");
  // A file system may report space it will not give this user (a quota, reserved blocks): write a block.
  std::string probe = (fs::path(dir) / ".hetsim-space-XXXXXX").string();
  const int fd      = ::mkstemp(probe.data());
  if (fd < 0)
    throw InputError(what + " " + dir + ": cannot create a file there: " + std::strerror(errno));
  const std::vector<char> block(kBlockBytes);
  const ssize_t written = ::write(fd, block.data(), block.size());
  const int write_errno = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (written != static_cast<ssize_t>(block.size()))
    throw InputError(what + " " + dir + ": cannot write there: " +
                     (written < 0 ? std::strerror(write_errno) : "the file system took part of a block"));
}

} // namespace hetsim::exec
