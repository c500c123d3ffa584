/// A rank that dies or stops answering ends the whole run quickly, with an error naming it, and leaves no
/// process behind.

#include "exec_fixtures.hpp"

#include <doctest/doctest.h>

using namespace hetsim::test;

namespace {

/// Starts a long data-parallel run, hits rank `victim` with `signal` once the ranks are working, and returns the
/// launcher's exit code, how long the run took to end after the signal, and its output.
struct Outcome {
  int exit_code = 0;
  double seconds_to_end = 0;
  std::string output;
  std::vector<pid_t> pids;
};

Outcome hit_rank(int victim, int signal, const std::string& timeout_s, const ScratchDir& dir)
{
  Child run({"run", "--cluster", data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
             data_file("dp4.json"), "--trace-dir", dir.path.string(), "--iterations", "1000", "--timeout-s",
             timeout_s},
            dir.path / "log");
  Outcome out;
  out.pids = rank_pids(dir.path / "log", 30);
  REQUIRE(out.pids.size() == 4);
  std::this_thread::sleep_for(std::chrono::seconds(2)); // past the rendezvous, inside the iterations
  ::kill(out.pids[victim], signal);
  const auto start    = std::chrono::steady_clock::now();
  out.exit_code       = run.wait(60);
  out.seconds_to_end  = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.output          = read_text(dir.path / "log");
  return out;
}

} // namespace

TEST_CASE("a killed rank ends the run within 30 s, named by the others and by the launcher")
{
  ScratchDir dir("killed");
  const Outcome out = hit_rank(2, SIGKILL, "20", dir);
  INFO(out.output);
  CHECK(out.exit_code == 2);
  CHECK(out.seconds_to_end < 30);
  CHECK(out.output.find("rank 2 died or stopped answering") != std::string::npos);
  CHECK(out.output.find("rank 2 (pid " + std::to_string(out.pids[2]) + ") was killed by signal 9") != std::string::npos);
  for (pid_t pid : out.pids)
    CHECK_MESSAGE(!alive(pid), pid);
  CHECK(!std::filesystem::exists(dir.path / "trace.json"));
}

TEST_CASE("a rank that stops answering is named after the timeout and killed; nothing is left behind")
{
  ScratchDir dir("stopped");
  const Outcome out = hit_rank(1, SIGSTOP, "3", dir);
  INFO(out.output);
  CHECK(out.exit_code == 2);
  CHECK(out.seconds_to_end < 30);
  CHECK(out.output.find("rank 1 died or stopped answering") != std::string::npos);
  CHECK(out.output.find("rank 1 (pid " + std::to_string(out.pids[1]) + ") had not exited and was killed") !=
        std::string::npos);
  for (pid_t pid : out.pids)
    CHECK_MESSAGE(!alive(pid), pid);
}
