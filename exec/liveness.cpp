#include "exec/liveness.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace hetsim::exec {
namespace {

namespace fs = std::filesystem;

/// Seconds since the file was last modified, or a negative value when it does not exist.
double age_s(const std::string& file)
{
  struct stat info{};
  if (::stat(file.c_str(), &info) != 0)
    return -1;
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec - info.st_mtim.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec - info.st_mtim.tv_nsec);
}

std::string first_line(const std::string& file)
{
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

/// The file the launcher writes its reason to when it ends the run (Liveness::abort_run).
std::string abort_file(const std::string& dir) { return dir + "/abort"; }

/// How a rank says that the launcher ended the run, for `reason`.
std::string ended_by_launcher(const std::string& reason) { return "the launcher ended the run: " + reason; }

void write_text(const std::string& file, const std::string& text)
{
  const std::string temporary = file + ".tmp";
  {
    std::ofstream out(temporary);
    out << text << '\n';
  }
  std::error_code ignored;
  fs::rename(temporary, file, ignored);
}

} // namespace

Liveness::Liveness(std::string dir, int rank, int world_size, OnAbort on_abort)
    : dir_(std::move(dir)), rank_(rank), world_size_(world_size), on_abort_(std::move(on_abort))
{
  // Only this rank writes its files, and only from here on: finding one means another run used the directory,
  // and its stale rendezvous keys would mislead this one.
  for (const char* what : {"alive", "done", "failed"})
    if (fs::exists(path(what, rank_)))
      throw InputError("--store-dir " + dir_ + ": already holds rank " + std::to_string(rank_) +
                       "'s files from another run; give each run a directory of its own");
  write_text(path("alive", rank_), "");
  thread_ = std::thread([this] {
    const std::string file  = path("alive", rank_);
    const std::string abort = abort_file(dir_);
    while (beating_) {
      ::utimensat(AT_FDCWD, file.c_str(), nullptr, 0);
      if (on_abort_ && fs::exists(abort)) {
        const std::string message = ended_by_launcher(first_line(abort));
        if (mark_failed(message))
          on_abort_(message);
        return;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(kBeatSeconds));
    }
  });
}

Liveness::~Liveness()
{
  beating_ = false;
  if (thread_.joinable())
    thread_.join();
}

std::string Liveness::path(const char* what, int rank) const
{
  return dir_ + "/" + what + "." + std::to_string(rank);
}

bool Liveness::mark_failed(const std::string& message)
{
  if (failed_.exchange(true))
    return false;
  beating_ = false;
  write_text(path("failed", rank_), message);
  return true;
}

void Liveness::abort_run(const std::string& dir, const std::string& reason)
{
  write_text(abort_file(dir), reason);
}

void Liveness::mark_done()
{
  write_text(path("done", rank_), "");
}

std::string Liveness::blame(double grace_s) const
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  const auto joined   = [](const std::vector<std::string>& entries) {
    std::string text;
    for (const auto& entry : entries)
      text += (text.empty() ? "" : "; ") + entry;
    return text;
  };
  while (true) {
    std::vector<std::string> failed, stale, silent; // silent: no heartbeat yet
    for (int r = 0; r < world_size_; ++r) {
      if (r == rank_)
        continue;
      if (fs::exists(path("failed", r))) {
        failed.push_back("rank " + std::to_string(r) + " failed: " + first_line(path("failed", r)));
        continue;
      }
      if (fs::exists(path("done", r)))
        continue;
      const double age = age_s(path("alive", r));
      if (age < 0) {
        silent.push_back("rank " + std::to_string(r) + " never started");
      } else if (age > kStaleSeconds) {
        char text[128];
        std::snprintf(text, sizeof text, "rank %d died or stopped answering (no heartbeat for %.1f s)", r, age);
        stale.push_back(text);
      }
    }
    // A rank whose heartbeat went stale is the cause; the errors other ranks reported may only be their view of
    // its death (their connections to it closed), so they are named only when no rank went silent within the
    // grace period. A rank without a heartbeat may have been killed before its first: the launcher, which saw
    // it end, is believed first.
    if (!stale.empty())
      return joined(stale);
    if (const std::string abort = abort_file(dir_); fs::exists(abort))
      return ended_by_launcher(first_line(abort));
    if (std::chrono::steady_clock::now() >= deadline)
      return joined(silent.empty() ? failed : silent);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace hetsim::exec
