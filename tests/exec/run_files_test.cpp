/// What a run leaves in the file system: its rendezvous directory (each run's own, and those of launchers that died
/// without removing theirs), the free space it checks for before it starts and, when it fails, its finished ranks'
/// traces.

#include "core/error.hpp"
#include "exec/run_space.hpp"
#include "exec/run_traces.hpp"
#include "exec/store_directory.hpp"
#include "tests/temp_folder.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fstream>
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

/// TMPDIR set to a folder of the test's own while it lives, as a user sets it: the stores a run makes and scans for
/// then lie there, apart from any other run's, and go with the folder.
struct OwnTemporaryDirectory {
  hetsim::test::TempFolder folder{"stores"};
  std::optional<std::string> before;
  OwnTemporaryDirectory()
  {
    if (const char* value = std::getenv("TMPDIR"))
      before = value;
    ::setenv("TMPDIR", folder.path.c_str(), 1);
  }
  ~OwnTemporaryDirectory()
  {
    if (before)
      ::setenv("TMPDIR", before->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
};

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
  const OwnTemporaryDirectory temporary;
  REQUIRE(fs::temp_directory_path() == temporary.folder.path);
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

TEST_CASE("the traces a failed run's finished ranks wrote are set aside as rank<i>.failed.json")
{
  const hetsim::test::TempFolder folder("failed_run_traces");
  const fs::path& dir = folder.path;
  for (const char* name : {"rank0.json", "rank2.json"})
    std::ofstream(dir / name) << "{}";
  CHECK(hetsim::exec::set_aside_rank_traces(dir.string(), 4) == 2);
  CHECK(fs::exists(dir / "rank0.failed.json"));
  CHECK(fs::exists(dir / "rank2.failed.json"));
  CHECK_FALSE(fs::exists(dir / "rank0.json"));
  CHECK_FALSE(fs::exists(dir / "rank1.failed.json"));
  CHECK(hetsim::exec::set_aside_rank_traces(dir.string(), 4) == 0);
}

TEST_CASE("the free space a run needs is checked where it writes, naming the directory")
{
  const std::string dir = fs::temp_directory_path().string();
  CHECK_NOTHROW(hetsim::exec::require_free_space(dir, 4096, "--trace-dir"));
  const auto available = fs::space(dir).available;
  try {
    hetsim::exec::require_free_space(dir, available + (std::uintmax_t{1} << 40), "--trace-dir");
    FAIL("a need beyond the free space was accepted");
  } catch (const hetsim::InputError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("--trace-dir " + dir + ": ", 0) == 0);
    CHECK(what.find("free, the run writes about") != std::string::npos);
  }
  CHECK_THROWS_AS(hetsim::exec::require_free_space(dir + "/no-such-directory", 1, "--store-dir"),
                  hetsim::InputError);
}
