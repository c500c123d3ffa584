/// `hetsim run` under an external launcher (mpirun, or processes given Open MPI's environment): every process takes
/// its rank from the environment and meets the others in --store-dir; rank 0 merges the traces and reports. The
/// mpirun cases are skipped when mpirun is not installed.

#include "exec_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <memory>

using namespace hetsim::test;
namespace fs = std::filesystem;

namespace {

bool have_mpirun()
{
  ScratchDir dir("which_mpirun");
  return Child("sh", {"-c", "command -v mpirun"}, dir.path / "log").wait(10) == 0;
}

std::vector<std::string> run_args(const std::string& plan, const fs::path& trace_dir)
{
  return {"run",           "--cluster",   data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
          data_file(plan), "--trace-dir", trace_dir.string()};
}

/// mpirun with four processes running `command`.
std::vector<std::string> mpirun_args(const std::vector<std::string>& command)
{
  std::vector<std::string> args = {"--oversubscribe", "--allow-run-as-root", "-np", "4"};
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

/// Task id -> name of a merged trace.
std::map<int, std::string> task_names(const fs::path& trace)
{
  const auto doc = nlohmann::json::parse(read_text(trace));
  std::map<int, std::string> names;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      names[e["args"]["task_id"].get<int>()] = e["name"].get<std::string>();
  return names;
}

std::size_t occurrences(const std::string& text, const std::string& what)
{
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

} // namespace

TEST_CASE("mpirun: rank and merged traces with the local launcher's task ids, one report from rank 0")
{
  if (!have_mpirun()) {
    MESSAGE("mpirun not found: skipped (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  ScratchDir dir("mpirun");
  auto local_args = run_args("pp2dp2z3.json", dir.path / "local");
  local_args.insert(local_args.end(), {"--iterations", "1"});
  Child local(local_args, dir.path / "local.log");
  REQUIRE_MESSAGE(local.wait(120) == 0, read_text(dir.path / "local.log"));

  std::vector<std::string> command = {HETSIM_CLI_PATH};
  for (const auto& a : run_args("pp2dp2z3.json", dir.path / "mpi"))
    command.push_back(a);
  command.insert(command.end(),
                 {"--iterations", "1", "--store-dir", (dir.path / "store").string(), "--bind", "127.0.0.1"});
  Child mpi("mpirun", mpirun_args(command), dir.path / "mpi.log");
  const int exit_code    = mpi.wait(120);
  const std::string text = read_text(dir.path / "mpi.log");
  INFO(text);
  REQUIRE(exit_code == 0);

  for (int r = 0; r < 4; ++r)
    CHECK(fs::exists(dir.path / "mpi" / ("rank" + std::to_string(r) + ".json")));
  CHECK(fs::exists(dir.path / "mpi" / "report.json"));
  const auto names = task_names(dir.path / "mpi" / "trace.json");
  CHECK(!names.empty());
  CHECK(names == task_names(dir.path / "local" / "trace.json"));
  CHECK(occurrences(text, "measured iteration") == 1);
  CHECK(occurrences(text, "trace written to") == 1);
  // The run met in a directory of its own under --store-dir, removed once every rank was done.
  CHECK(fs::is_empty(dir.path / "store"));

  // The same --store-dir again: a new run, a new directory.
  Child again("mpirun", mpirun_args(command), dir.path / "again.log");
  CHECK_MESSAGE(again.wait(120) == 0, read_text(dir.path / "again.log"));
}

TEST_CASE("mpirun: a killed rank ends the run, named, and no rank is left")
{
  if (!have_mpirun()) {
    MESSAGE("mpirun not found: skipped (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  ScratchDir dir("mpirun_killed");
  // Each process records its pid (kept by exec) so that the test can kill rank 2.
  std::string rank =
      std::string("echo $$ > ") + dir.path.string() + "/pid.$OMPI_COMM_WORLD_RANK; exec " + HETSIM_CLI_PATH;
  for (const auto& a : run_args("dp4.json", dir.path / "out"))
    rank += " " + a;
  rank += " --iterations 1000 --timeout-s 20 --bind 127.0.0.1 --store-dir " + (dir.path / "store").string();
  Child mpi("mpirun", mpirun_args({"sh", "-c", rank}), dir.path / "log");

  std::vector<pid_t> pids;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (pids.size() < 4 && std::chrono::steady_clock::now() < deadline) {
    pids.clear();
    for (int r = 0; r < 4; ++r)
      if (const std::string pid = read_text(dir.path / ("pid." + std::to_string(r))); !pid.empty())
        pids.push_back(std::stoi(pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(pids.size() == 4);
  std::this_thread::sleep_for(std::chrono::seconds(2)); // past the rendezvous, inside the iterations
  ::kill(pids[2], SIGKILL);
  // A bound against a hang, not a timing: the failed exit, the messages and the missing trace say why it ended.
  const int exit_code    = mpi.wait(240);
  const std::string text = read_text(dir.path / "log");
  INFO(text);
  CHECK(exit_code != 0);
  // mpirun names the rank it saw die; the others may name it first from their heartbeats.
  CHECK((text.find("process rank 2 ") != std::string::npos ||
         text.find("rank 2 died or stopped answering") != std::string::npos));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (pid_t pid : pids)
    CHECK_MESSAGE(!alive(pid), pid);
  CHECK(!fs::exists(dir.path / "out" / "trace.json"));
}

TEST_CASE("ranks of an external launcher: when one leaves no trace, rank 0 fails the run and sets the others' aside")
{
  // Four processes started as Open MPI starts them (no mpirun needed); rank 3 writes its trace elsewhere, so rank
  // 0, which merges, finds every trace but its own and fails the run after the ranks have finished.
  ScratchDir dir("set_aside");
  const fs::path traces = dir.path / "traces";
  std::vector<std::unique_ptr<Child>> ranks;
  for (int r = 0; r < 4; ++r) {
    std::vector<std::string> args = {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "OMPI_COMM_WORLD_SIZE=4",
                                     "PMIX_NAMESPACE=set-aside", HETSIM_CLI_PATH};
    for (const auto& a : run_args("dp4.json", r == 3 ? dir.path / "elsewhere" : traces))
      args.push_back(a);
    args.insert(args.end(), {"--iterations", "1", "--timeout-s", "5", "--bind", "127.0.0.1", "--store-dir",
                             (dir.path / "store").string()});
    ranks.push_back(std::make_unique<Child>("env", args, dir.path / ("rank" + std::to_string(r) + ".log")));
  }
  const int rank0 = ranks[0]->wait(120);
  const std::string text = read_text(dir.path / "rank0.log");
  INFO(text);
  for (int r = 1; r < 4; ++r)
    CHECK(ranks[r]->wait(60) == 0);
  CHECK(rank0 == 2);
  CHECK(text.find("rank 3 wrote no trace") != std::string::npos);
  CHECK(text.find("the traces of the 3 ranks that finished are kept as rank<i>.failed.json") != std::string::npos);
  for (int r = 0; r < 3; ++r) {
    CHECK(fs::exists(traces / ("rank" + std::to_string(r) + ".failed.json")));
    CHECK_FALSE(fs::exists(traces / ("rank" + std::to_string(r) + ".json")));
  }
  CHECK(fs::exists(dir.path / "elsewhere" / "rank3.json"));
  CHECK_FALSE(fs::exists(traces / "trace.json"));
}
