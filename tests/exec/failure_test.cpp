/// A rank that dies or stops answering ends the whole run quickly, with an error naming it, and leaves no
/// process behind.

#include "exec_fixtures.hpp"

#include "exec/launcher.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <sys/wait.h>

using namespace hetsim::test;

namespace {

/// Starts a long data-parallel run, hits rank `victim` with `signal` once the ranks are working (or, with
/// `after_s` 0, as soon as they exist: during start-up), and returns the launcher's exit code and its output.
/// The waits are bounds against a hang, not timings: how the run ended is read from the messages.
struct Outcome {
  int exit_code = 0;
  std::string output;
  std::vector<pid_t> pids;
  std::vector<bool> ignore_sigpipe; ///< per rank, read from /proc before the hit
};

/// Whether process `pid` ignores SIGPIPE (its SigIgn mask in /proc/PID/status).
bool ignores_sigpipe(pid_t pid)
{
  std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigIgn:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (SIGPIPE - 1)) & 1;
  return false;
}

Outcome hit_rank(int victim, int signal, const std::string& timeout_s, double after_s, const ScratchDir& dir)
{
  Child run({"run", "--cluster", data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
             data_file("dp4.json"), "--trace-dir", dir.path.string(), "--iterations", "1000", "--timeout-s",
             timeout_s},
            dir.path / "log");
  Outcome out;
  out.pids = rank_pids(dir.path / "log", 60);
  REQUIRE(out.pids.size() == 4);
  std::this_thread::sleep_for(std::chrono::duration<double>(after_s));
  for (pid_t pid : out.pids)
    out.ignore_sigpipe.push_back(ignores_sigpipe(pid));
  ::kill(out.pids[victim], signal);
  out.exit_code = run.wait(240);
  out.output    = read_text(dir.path / "log");
  return out;
}

/// The lines the healthy ranks printed ("hetsim: rank R: ..."), one per rank that reported.
std::vector<std::string> rank_lines(const std::string& output, int victim)
{
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("hetsim: rank ", 0) == 0 && line.rfind("hetsim: rank " + std::to_string(victim) + ":", 0) != 0)
      lines.push_back(line);
  return lines;
}

/// Checks that the run failed with exit code 2, that the launcher reported `victim`'s `fate` ("was killed by
/// signal 9") first, and that no rank is left; returns the launcher's account ("rank 2 (pid 81) was killed ...").
std::string check_run_failed(const Outcome& out, int victim, const std::string& fate)
{
  CHECK(out.exit_code == 2);
  const std::string account =
      "rank " + std::to_string(victim) + " (pid " + std::to_string(out.pids[victim]) + ") " + fate;
  CHECK(out.output.find("run failed: " + account) != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (pid_t pid : out.pids)
    CHECK_MESSAGE(!alive(pid), pid);
  return account;
}

} // namespace

TEST_CASE("a killed rank ends the run, named by the others and by the launcher")
{
  ScratchDir dir("killed");
  const Outcome out = hit_rank(2, SIGKILL, "20", 2, dir); // past the rendezvous, inside the iterations
  INFO(out.output);
  const std::string launcher_view = check_run_failed(out, 2, "was killed by signal 9");
  // A peer's death closes its sockets: writing to them must be an error a rank reports, not SIGPIPE killing a
  // bystander first (which the launcher then blamed).
  for (std::size_t r = 0; r < out.ignore_sigpipe.size(); ++r)
    CHECK_MESSAGE(out.ignore_sigpipe[r], "rank " << r << " does not ignore SIGPIPE");
  // Each healthy rank names rank 2: from its own broken connection and rank 2's stale heartbeat, or from the
  // launcher, whichever came first.
  for (const auto& line : rank_lines(out.output, 2))
    CHECK_MESSAGE((line.find("rank 2 died or stopped answering") != std::string::npos ||
                   line.find("the launcher ended the run: " + launcher_view) != std::string::npos),
                  line);
  CHECK(!std::filesystem::exists(dir.path / "trace.json"));
}

TEST_CASE("a rank killed during start-up ends the others at once, not after their rendezvous timeout")
{
  ScratchDir dir("killed_at_start");
  // A 60 s timeout: ranks that waited for it would say "Wait timeout", not name the launcher's reason.
  const Outcome out = hit_rank(2, SIGKILL, "60", 0, dir);
  INFO(out.output);
  check_run_failed(out, 2, "was killed by signal 9");
  CHECK(out.output.find("Wait timeout") == std::string::npos);
  CHECK(out.output.find("never started") == std::string::npos);
  CHECK(out.output.find("had not exited and was killed") == std::string::npos);
  for (const auto& line : rank_lines(out.output, 2))
    CHECK_MESSAGE(line.find("rank 2") != std::string::npos, line);
}

TEST_CASE("a rank stopped past nine tenths of --timeout-s is killed, and the others end naming it")
{
  for (const double after_s : {0.0, 2.0}) { // during start-up, and inside the iterations
    CAPTURE(after_s);
    ScratchDir dir("stopped");
    const Outcome out = hit_rank(1, SIGSTOP, "4", after_s, dir);
    INFO(out.output);
    check_run_failed(out, 1, "was stopped by signal 19");
    CHECK(out.output.find("and was not continued within 3.6 s") != std::string::npos);
    CHECK(out.output.find("Timed out") == std::string::npos);
    CHECK(out.output.find("Wait timeout") == std::string::npos);
    for (const auto& line : rank_lines(out.output, 1))
      CHECK_MESSAGE(line.find("rank 1") != std::string::npos, line);
  }
}

TEST_CASE("a rank stopped and continued within --timeout-s (a debugger attaching) leaves the run to finish")
{
  ScratchDir dir("stopped_and_continued");
  Child run({"run", "--cluster", data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
             data_file("dp4.json"), "--trace-dir", dir.path.string(), "--iterations", "20", "--timeout-s", "20"},
            dir.path / "log");
  const std::vector<pid_t> pids = rank_pids(dir.path / "log", 60);
  REQUIRE(pids.size() == 4);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(::kill(pids[1], SIGSTOP) == 0); // still running: 20 iterations take seconds
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pids[1], SIGCONT);
  CHECK(run.wait(240) == 0);
  INFO(read_text(dir.path / "log"));
  CHECK(std::filesystem::exists(dir.path / "trace.json"));
}

TEST_CASE("a launcher killed with SIGKILL leaves no rank behind")
{
  ScratchDir dir("launcher_killed");
  Child run({"run", "--cluster", data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
             data_file("dp4.json"), "--trace-dir", dir.path.string(), "--iterations", "1000"},
            dir.path / "log");
  const std::vector<pid_t> pids = rank_pids(dir.path / "log", 60);
  REQUIRE(pids.size() == 4);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  run.kill(SIGKILL);
  // The ranks die with their parent (PR_SET_PDEATHSIG); the loop only bounds a hang.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto any_alive     = [&] { return std::any_of(pids.begin(), pids.end(), alive); };
  while (any_alive() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (pid_t pid : pids)
    CHECK_MESSAGE(!alive(pid), pid);
}

TEST_CASE("ranks that ended between two looks are blamed signal first, whatever order waitpid gave")
{
  // Rank 1 exited with code 2 (its peer's sockets closed), rank 2 was killed: waitpid may give either first.
  const auto exited = [](int code) { return (code & 0xff) << 8; }; // a wait status as waitpid writes it
  std::vector<hetsim::exec::EndedRank> ended = {{1, exited(2), 101}, {3, exited(2), 103}, {2, SIGKILL, 102}};
  hetsim::exec::order_by_cause(ended);
  REQUIRE(ended.size() == 3);
  CHECK(ended[0].rank == 2);
  CHECK(WIFSIGNALED(ended[0].status));
  CHECK(ended[1].rank == 1); // the others as they came
  CHECK(ended[2].rank == 3);
}
