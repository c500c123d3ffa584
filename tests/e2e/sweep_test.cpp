/// hetsim sweep, plot and generate-cluster end to end: resumable output, the same output on 1 and 2 MPI ranks,
/// clear input errors, and the scheduler's acceptance on the world-wide scenario.

#include "cli_runner.hpp"

#include "core/cluster_json.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

namespace hetsim {
namespace {

using e2e::run_command;
using e2e::TempDir;
using e2e::read_file;
namespace fs = std::filesystem;

const std::string kHetsim = HETSIM_CLI_PATH;

bool on_path(const char* program) { return run_command(std::string("command -v ") + program).exit_code == 0; }

/// A small generated cluster (4 regions x 2 GPUs) and a sweep of 6 cells over it.
std::string small_spec(const TempDir& dir)
{
  const auto r = run_command(kHetsim + " generate-cluster --regions 4 --devices-per-region 2 --seed 3 --out " +
                             dir.file("small.json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return dir.file("spec.json", R"({"clusters": ["small.json"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm", "dtfm-random", "zero3"], "global_batch": [16], "seeds": [1, 2], "top": 2})");
}

/// simulated_s by planner from a sweep JSON (the mean over rows of one planner).
std::map<std::string, double> mean_by_planner(const std::string& json_file)
{
  std::map<std::string, double> sum, count;
  for (const auto& row : nlohmann::json::parse(read_file(json_file))) {
    REQUIRE(row["status"] == "ok");
    sum[row["planner"]] += row["simulated_s"].get<double>();
    count[row["planner"]] += 1;
  }
  for (auto& [planner, s] : sum)
    s /= count[planner];
  return sum;
}

/// Rows (lines after the header) of a sweep CSV; 0 when it does not exist.
int csv_rows(const fs::path& file)
{
  const std::string text = read_file(file);
  return text.empty() ? 0 : static_cast<int>(std::count(text.begin(), text.end(), '\n')) - 1;
}

/// Every process of the session led by `leader`, as a job scheduler's kill reaches all of a job's processes
/// (mpirun's children may sit in process groups of their own).
void kill_session(pid_t leader)
{
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string stat = read_file(entry.path() / "stat");
    const auto close       = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long parent = 0, group = 0, session = 0;
    if (fields >> state >> parent >> group >> session && session == leader)
      ::kill(static_cast<pid_t>(std::stol(entry.path().filename().string())), SIGKILL);
  }
}

/// Runs `command_line` in a session of its own and kills every process of it with SIGKILL once `ready` holds
/// (checked every 5 ms). Returns false when the command ended before that.
template <typename Ready>
bool kill_when(const std::string& command_line, const fs::path& log, Ready ready)
{
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    const std::string command = command_line + " > '" + log.string() + "' 2>&1";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  while (!ready()) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill_session(pid);
  ::waitpid(pid, nullptr, 0);
  return true;
}

} // namespace

TEST_CASE("sweep: every cell planned and simulated, resumable, deterministic")
{
  TempDir dir("sweep");
  const std::string spec = small_spec(dir);
  const auto first       = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("a.csv"));
  REQUIRE_MESSAGE(first.exit_code == 0, first.output);
  CHECK(first.output.find("6 cells, 0 already") != std::string::npos);
  const std::string csv = read_file(dir.path / "a.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 7); // header + 6 cells
  const auto means = mean_by_planner(dir.path / "a.json");
  CHECK(means.at("dtfm") < means.at("dtfm-random"));

  // Resume: drop the last two rows; only those cells run again, and the file comes back byte for byte.
  std::string partial = csv;
  for (int k = 0; k < 2; ++k)
    partial.erase(partial.rfind('\n', partial.size() - 2) + 1);
  dir.file("a.csv", partial);
  const auto resumed = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("a.csv"));
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  CHECK(resumed.output.find("4 already") != std::string::npos);
  CHECK(resumed.output.find("2 run") != std::string::npos);
  CHECK(read_file(dir.path / "a.csv") == csv);
}

TEST_CASE("sweep: 2 MPI ranks write the same rows in the same order as 1")
{
  if (!on_path("mpirun")) {
    MESSAGE("mpirun not found: skipped (scripts/setup.sh installs openmpi-bin)");
    return;
  }
#ifndef HETSIM_WITH_MPI
  MESSAGE("hetsim built without MPI: skipped");
  return;
#endif
  TempDir dir("sweep_mpi");
  const std::string spec = small_spec(dir);
  const auto one = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("one.csv"));
  REQUIRE_MESSAGE(one.exit_code == 0, one.output);
  const auto two = run_command("mpirun --oversubscribe --allow-run-as-root -np 2 " + kHetsim + " sweep --spec " +
                               spec + " --out " + dir.file("two.csv"));
  REQUIRE_MESSAGE(two.exit_code == 0, two.output);
  CHECK(two.output.find("run on 2 processes") != std::string::npos);
  CHECK(read_file(dir.path / "two.csv") == read_file(dir.path / "one.csv"));
  CHECK(read_file(dir.path / "two.json") == read_file(dir.path / "one.json"));
}

TEST_CASE("sweep: killed with SIGKILL mid-sweep, alone or as a whole MPI job, it resumes with every finished cell")
{
  TempDir dir("sweep_killed");
  const auto r = run_command(kHetsim + " generate-cluster --regions 4 --devices-per-region 2 --seed 3 --out " +
                             dir.file("small.json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  // 48 cells of a fraction of a second each: the kill comes after a few of them, long before the last.
  const std::string spec = dir.file("spec.json", R"({"clusters": ["small.json"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm", "dtfm-random", "zero3"], "global_batch": [16, 32], "seeds": [1, 2, 3, 4, 5, 6, 7, 8],
    "top": 2})");
  const auto reference = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("reference.csv"));
  REQUIRE_MESSAGE(reference.exit_code == 0, reference.output);

  std::vector<std::pair<std::string, std::string>> launchers = {{"alone", ""}};
#ifdef HETSIM_WITH_MPI
  if (on_path("mpirun"))
    launchers.emplace_back("mpirun", "mpirun --oversubscribe --allow-run-as-root -np 2 ");
#endif
  for (const auto& [name, launcher] : launchers) {
    CAPTURE(name);
    const fs::path csv         = dir.path / (name + ".csv");
    const fs::path part        = dir.path / (name + ".csv.part1");
    const std::string command  = launcher + kHetsim + " sweep --spec " + spec + " --out " + csv.string();
    const bool mpi             = !launcher.empty();
    const bool killed = kill_when(command, dir.path / (name + ".log"), [&] {
      return csv_rows(csv) >= 2 && (!mpi || csv_rows(part) >= 2); // rank 1 has finished cells too
    });
    REQUIRE_MESSAGE(killed, read_file(dir.path / (name + ".log")));
    const int finished = csv_rows(csv) + csv_rows(part);
    CHECK(finished < 48);

    const auto resumed = run_command(command);
    REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
    CHECK_MESSAGE(resumed.output.find("48 cells, " + std::to_string(finished) + " already") != std::string::npos,
                  resumed.output);
    CHECK(read_file(csv) == read_file(dir.path / "reference.csv"));
    CHECK(!fs::exists(part));
  }
}

TEST_CASE("sweep: results never replace a cluster or model the spec reads")
{
  TempDir dir("sweep-clobber");
  const std::string spec    = small_spec(dir); // reads small.json
  const std::string cluster = read_file(dir.path / "small.json");
  const auto r = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("small.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("small.json: refusing to overwrite an input file") != std::string::npos);
  CHECK(read_file(dir.path / "small.json") == cluster);
}

TEST_CASE("sweep: a cell whose GPUs lack the spec's dtype is infeasible, naming the device; the others run")
{
  TempDir dir("sweep-dtype");
  dir.file("v100.json", R"({"name": "v100s", "regions": [{"nodes": [{"gpu": "V100", "devices": 2}]}]})");
  dir.file("a100.json", R"({"name": "a100s", "regions": [{"nodes": [{"gpu": "A100", "devices": 2}]}]})");
  const std::string spec = dir.file("spec.json", R"({"clusters": ["v100.json", "a100.json"],
    "models": ["preset:gpt2-medium"], "planners": ["zero3"], "global_batch": [4], "top": 1, "dtype": "bf16"})");
  const auto r = run_command(kHetsim + " sweep --spec " + spec + " --out " + (dir.path / "out.csv").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto rows = nlohmann::json::parse(read_file(dir.path / "out.json"));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["status"] == "infeasible");
  CHECK(rows[0]["note"].get<std::string>().find("sweep spec: dtype: bf16 needs bf16 tensor cores, which device 0's "
                                                "V100-SXM2-16GB") != std::string::npos);
  CHECK(rows[1]["status"] == "ok");
}

TEST_CASE("sweep, plot and generate-cluster: bad input is one line and exit 2")
{
  TempDir dir("sweep_errors");
  const std::string spec = dir.file("bad.json", R"({"clusters": ["preset:case4_regional_geo"],
    "models": ["preset:gpt2-medium"], "planners": ["dtfm", "nope"], "global_batch": [16]})");
  auto r = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("x.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("bad.json: planners[1]: unknown planner 'nope'") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);

  dir.file("batch.json", R"({"clusters": ["preset:case4_regional_geo"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm"], "global_batch": [0]})");
  r = run_command(kHetsim + " sweep --spec " + dir.file("batch.json") + " --out " + dir.file("x.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("global_batch[0]") != std::string::npos);

  // Work without bounds: a global batch past 2^20 sequences (2^31 - 1 ran out of memory at once), and more cells
  // than 100,000 (a million-cell sweep was accepted).
  dir.file("huge.json", R"({"clusters": ["preset:case4_regional_geo"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm"], "global_batch": [16, 2147483647]})");
  r = run_command(kHetsim + " sweep --spec " + dir.file("huge.json") + " --out " + dir.file("x.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("huge.json: global_batch[1]: expected a positive integer of at most 1048576 sequences") !=
        std::string::npos);
  std::string seeds;
  for (int seed = 1; seed <= 400; ++seed)
    seeds += (seed > 1 ? ", " : "") + std::to_string(seed);
  std::string batches;
  for (int batch = 1; batch <= 300; ++batch)
    batches += (batch > 1 ? ", " : "") + std::to_string(batch);
  dir.file("cells.json", R"({"clusters": ["preset:case4_regional_geo"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm"], "global_batch": [)" + batches + R"(], "seeds": [)" + seeds + "]}");
  r = run_command(kHetsim + " sweep --spec " + dir.file("cells.json") + " --out " + dir.file("x.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cells.json: expected at most 100000 cells (the product of every list's length), got 120000") !=
        std::string::npos);
  r = run_command(kHetsim + " search --cluster preset:case4_regional_geo --model preset:gpt2-medium --global-batch "
                            "1073741824");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--global-batch") != std::string::npos);

  // A jobs file beside the cells that names a node the cluster lacks: named before any cell runs.
  dir.file("moon.json", R"({"jobs": [{"name": "j", "nodes": ["moon"], "model": "preset:gpt2-medium",
    "planner": "dtfm", "global_batch": 8}]})");
  dir.file("beside.json", R"({"clusters": ["preset:case4_regional_geo"], "models": ["preset:gpt2-medium"],
    "planners": ["dtfm"], "global_batch": [16], "beside": ["none", "moon.json"]})");
  r = run_command(kHetsim + " sweep --spec " + dir.file("beside.json") + " --out " + dir.file("x.csv"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("moon.json: jobs[0].nodes[0]: expected a node of cluster") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);

  r = run_command(kHetsim + " generate-cluster --regions 3 --bandwidth-gbps 2:1 --out " + dir.file("g.json"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--bandwidth-gbps") != std::string::npos);

  r = run_command(kHetsim + " plot --csv " + dir.file("x.csv", "a,b\n1,2\n") + " --out " + dir.file("p.pdf"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(".png or .svg") != std::string::npos);
}

TEST_CASE("generate-cluster: seeded, loadable, asymmetric bandwidth when asked")
{
  TempDir dir("generate");
  const std::string args = " generate-cluster --regions Oslo,Lima,Perth --devices-per-region 3 --asymmetric --seed 9";
  REQUIRE(run_command(kHetsim + args + " --out " + dir.file("a.json")).exit_code == 0);
  REQUIRE(run_command(kHetsim + args + " --out " + dir.file("b.json")).exit_code == 0);
  CHECK(read_file(dir.path / "a.json") == read_file(dir.path / "b.json"));
  const Cluster cluster = load_cluster(dir.file("a.json"));
  CHECK(cluster.device_count() == 9);
  CHECK(cluster.regions()[2].name == "Perth");
  bool asymmetric = false;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (i != j)
        asymmetric = asymmetric || cluster.inter_region(i, j).bandwidth_bytes_per_s !=
                                       cluster.inter_region(j, i).bandwidth_bytes_per_s;
  CHECK(asymmetric);
}

TEST_CASE("plot: a sweep CSV becomes a PNG")
{
  if (!on_path("gnuplot")) {
    MESSAGE("gnuplot not found: skipped (scripts/setup.sh installs gnuplot-nox)");
    return;
  }
  TempDir dir("plot");
  const std::string csv = dir.file("r.csv", "cluster,planner,simulated_s,status\nc1,a,1.5,ok\nc1,b,3,ok\n"
                                            "c2,a,2,ok\nc2,b,4,ok\nc2,b,9,infeasible\n");
  const auto r = run_command(kHetsim + " plot --csv " + csv + " --out " + dir.file("r.png") + " --table " +
                             dir.file("r.tsv"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(read_file(dir.path / "r.png").substr(1, 3) == "PNG");
  CHECK(read_file(dir.path / "r.tsv") == "cluster\ta\tb\nc1\t1.5\t3\nc2\t2\t4\n");
}

TEST_CASE("geo_decentralized acceptance on case 5: the scheduler vs random layouts and the grid")
{
  // The experiment's case-5 cells at 16 stages, one re-scored candidate each (experiments/geo_decentralized).
  TempDir dir("geo_case5");
  const std::string spec = dir.file("spec.json", R"({"top": 1, "products": [
    {"clusters": ["preset:case5_worldwide_geo"], "models": ["preset:gpt3-1.3b"], "planners": ["dtfm"],
     "global_batch": [1024], "pp": [16]},
    {"clusters": ["preset:case5_worldwide_geo"], "models": ["preset:gpt3-1.3b"], "planners": ["dtfm-random"],
     "global_batch": [1024], "pp": [16], "seeds": [1, 2, 3]},
    {"clusters": ["preset:case5_worldwide_geo"], "models": ["preset:gpt3-1.3b"], "planners": ["megatron-grid"],
     "global_batch": [1024]}]})");
  const auto r = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("r.csv"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto means = mean_by_planner(dir.path / "r.json");
  CHECK(means.at("dtfm-random") >= 2.0 * means.at("dtfm"));
  CHECK(means.at("megatron-grid") >= 1.5 * means.at("dtfm"));
}

TEST_CASE("sweep: a second job beside each cell, planned around and replayed together")
{
  TempDir dir("sweep_beside");
  const std::string examples = std::string(HETSIM_SOURCE_DIR) + "/docs/examples/";
  const std::string spec     = dir.file("spec.json", R"({"clusters": [")" + examples + R"(two_sites.json"],
    "models": ["preset:gpt3-1.3b"], "planners": ["megatron"], "global_batch": [256],
    "beside": ["none", ")" + examples + R"(llama_beside.json"], "top": 2})");
  const auto r = run_command(kHetsim + " sweep --spec " + spec + " --out " + dir.file("b.csv"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto rows = nlohmann::json::parse(read_file(dir.path / "b.json"));
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    REQUIRE(row["status"] == "ok");
    const int devices = row["tp"].get<int>() * row["pp"].get<int>() * row["dp"].get<int>();
    if (row["beside"] == "none") {
      CHECK(devices == 64); // the whole cluster
      CHECK(row["slowdown"].is_null());
    } else {
      CHECK(devices == 32); // the four nodes Llama leaves
      CHECK(row["slowdown"].get<double>() >= 1 - 1e-9);
      CHECK(row["beside_slowdown"].get<double>() >= 1 - 1e-9);
    }
  }
  // Both jobs cross the sites' one 25 Gb/s link: the cell's plan is slowed beside Llama.
  CHECK(rows[1]["slowdown"].get<double>() > 1.01);
}

} // namespace hetsim
