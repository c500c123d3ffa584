/// Rendezvous directories: each run's own, and those of launchers that died without removing theirs.

#include "exec/store_directory.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

/// The pid of a process that has exited and been reaped.
pid_t dead_pid()
{
  const pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

fs::path store_of(pid_t owner, const std::string& suffix, std::chrono::minutes age)
{
  const fs::path dir = fs::temp_directory_path() / ("hetsim-store-" + std::to_string(owner) + "-" + suffix);
  fs::create_directories(dir);
  fs::last_write_time(dir, fs::file_time_type::clock::now() - age);
  return dir;
}

} // namespace

TEST_CASE("a new run removes the stores of launchers killed before they could, and only those")
{
  const pid_t dead                = dead_pid();
  const fs::path orphaned         = store_of(dead, "orphan", std::chrono::minutes(5));
  const fs::path written_recently = store_of(dead, "recent", std::chrono::minutes(0)); // another namespace's
  const fs::path running          = store_of(::getpid(), "running", std::chrono::minutes(5));
  {
    const hetsim::exec::StoreDirectory store;
    CHECK(fs::is_directory(store.path));
    CHECK(fs::path(store.path).filename().string().rfind("hetsim-store-" + std::to_string(::getpid()) + "-", 0) == 0);
    CHECK_FALSE(fs::exists(orphaned));
    CHECK(fs::exists(written_recently));
    CHECK(fs::exists(running));
  }
  fs::remove_all(written_recently);
  fs::remove_all(running);
}
