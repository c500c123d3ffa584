/// End-to-end: `hetsim search` on AMP's heterogeneous cluster, its outputs, and its refusals.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace hetsim::e2e;

namespace {

const std::string kAmpCluster = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/cluster.json";
const std::string kAmpModel   = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/gpt2-medium-amp.json";
const std::string kAmpInputs  = "--cluster " + kAmpCluster + " --model " + kAmpModel;

double report_iteration_time(const std::string& report_file)
{
  return nlohmann::json::parse(read_file(report_file)).at("iteration_time_s").get<double>();
}

} // namespace

TEST_CASE("search: --list-planners names every planner with a description")
{
  const RunResult r = run_hetsim("search --list-planners");
  CHECK(r.exit_code == 0);
  for (const char* name : {"amp ", "hethub ", "megatron ", "random "})
    CHECK(r.output.find(name) != std::string::npos);
}

TEST_CASE("search: ranked candidates with estimate and simulation; the best plan simulates unchanged")
{
  TempDir dir("search");
  const std::string out  = dir.file("plans.json");
  const std::string best = dir.file("best.json");
  const RunResult r = run_hetsim("search " + kAmpInputs + " --global-batch 32 --planner megatron --top 2 --out " + out +
                                 " --best " + best);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto ranked = nlohmann::json::parse(read_file(out));
  REQUIRE(ranked.size() > 2);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    CHECK(ranked[i]["rank"] == i + 1);
    CHECK(ranked[i]["estimate_s"].get<double>() > 0);
    CHECK(ranked[i]["simulated_s"].is_null() == (i >= 2));
  }
  CHECK(ranked[0]["simulated_s"].get<double>() <= ranked[1]["simulated_s"].get<double>());
  // Progress, as a log sees it: counts, the time elapsed, and the time left while some remain.
  CHECK(r.output.find("simulating the best candidates: 1/2, ") != std::string::npos);
  CHECK(r.output.find(" elapsed, about ") != std::string::npos);
  CHECK(r.output.find("simulating the best candidates: 2/2, ") != std::string::npos);

  const std::string report = dir.file("report.json");
  const RunResult sim      = run_hetsim("simulate " + kAmpInputs + " --plan " + best + " --report " + report);
  INFO(sim.output);
  REQUIRE(sim.exit_code == 0);
  CHECK(report_iteration_time(report) == doctest::Approx(ranked[0]["simulated_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("search --collective-algorithm nccl: every candidate is priced and written with NCCL's choice")
{
  TempDir dir("search_nccl");
  auto best_of = [&](const std::string& algorithm) {
    const std::string best = dir.file(algorithm + ".json");
    const RunResult r      = run_hetsim("search " + kAmpInputs + " --global-batch 32 --planner megatron --top 1 " +
                                        "--collective-algorithm " + algorithm + " --best " + best);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_file(best));
  };
  const nlohmann::json nccl = best_of("nccl");
  CHECK(nccl["collective_algorithm"] == "nccl");
  CHECK(best_of("ring")["collective_algorithm"] == "ring");
  // The plan simulates as written, with NCCL's choice.
  const std::string report = dir.file("report.json");
  const RunResult sim      = run_hetsim("simulate " + kAmpInputs + " --plan " + dir.file("nccl.json") +
                                        " --report " + report);
  INFO(sim.output);
  CHECK(sim.exit_code == 0);
}

TEST_CASE("search: a per-layer profile replaces the roofline estimate")
{
  TempDir dir("profile");
  // 26 layers (embedding, 24 blocks, head) measured at 50 ms per sequence each on V100 and T4 at every tp, far slower
  // than the roofline: every plan's compute, and so the best estimate, grows.
  nlohmann::json profile = nlohmann::json::array();
  for (const char* gpu : {"V100", "T4"})
    for (int tp : {1, 2, 4})
      profile.push_back(
          {{"gpu", gpu}, {"tp", tp}, {"micro_batch", 1}, {"layer_forward_s", std::vector<double>(26, 0.05)}});
  const std::string profile_file = dir.file("profile.json", profile.dump());
  auto best_estimate             = [&](const std::string& extra) {
    const std::string out = dir.file("out.json");
    const RunResult r =
        run_hetsim("search " + kAmpInputs + " --global-batch 16 --planner megatron --top 0 --out " + out + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_file(out))[0]["estimate_s"].get<double>();
  };
  // The profile's compute of the 16 sequences (forward and twice that backward) spread over the 16 devices is
  // 3.9 s; larger micro-batches run a little faster per sequence along the model's curve.
  const double profiled_share = 16 * 26 * 3 * 0.05 / 16;
  const double with_profile   = best_estimate(" --profile " + profile_file);
  CHECK(with_profile >= 0.9 * profiled_share);
  CHECK(best_estimate("") < 0.3 * profiled_share);
}

TEST_CASE("search: refusals are one line and exit 2")
{
  TempDir dir("search_bad");
  struct Case {
    const char* what;
    std::string args;
    std::string expected;
  };
  const std::string two_layers  = dir.file("two.json", R"({"name": "two", "seq_len": 128, "layers": [
      {"name": "a", "kind": "transformer", "params": 1e6, "forward_flops_per_sample": 1e9, "activation_bytes_per_sample": 1e5, "saved_activation_bytes_per_sample": 1e6},
      {"name": "b", "kind": "transformer", "params": 1e6, "forward_flops_per_sample": 1e9, "activation_bytes_per_sample": 1e5, "saved_activation_bytes_per_sample": 1e6}]})");
  const std::vector<Case> cases = {
      {"unknown planner", kAmpInputs + " --global-batch 32 --planner alpa",
       "unknown planner 'alpa'; known: amp, hethub, megatron, random"},
      {"global batch not divisible", "--cluster " + kAmpCluster + " --model " + two_layers + " --global-batch 7",
       "global batch 7 (--global-batch) is not divisible by any data-parallel degree of the 16 devices of cluster "
       "'amp_het_cluster'"},
      {"a planner's refusal names the inputs it came from",
       "--cluster " + kAmpCluster + " --model " + two_layers + " --global-batch 7 --planner zero3",
       "zero3: global batch 7 is not divisible by the 16 devices [--cluster " + kAmpCluster + ", --model " +
           two_layers + ", --global-batch 7]"},
      {"model too large: the closest candidate",
       "--cluster " + kAmpCluster + " --model preset:llama-2-70b --global-batch 32 --planner megatron",
       "fits in memory; the closest needs "},
      {"model too large: the cluster field", "--cluster " + kAmpCluster + " --model preset:llama-2-70b --global-batch 32",
       "; its GPU is set by " + kAmpCluster + ": regions[0].nodes[0].gpu"},
      {"not one sequence fits: each GPU with its cluster field",
       "--cluster " + kAmpCluster + " --model preset:llama-2-70b --global-batch 32 --planner poplar",
       "does not fit one sequence of llama-2-70b (68.98B parameters) on V100-SXM2-16GB (" + kAmpCluster +
           ": regions[0].nodes[0].gpu), T4 (" + kAmpCluster + ": regions[0].nodes[1].gpu)"},
      {"no global batch", kAmpInputs, "--global-batch"},
      {"bad memory limit", kAmpInputs + " --global-batch 32 --memory-limit 12XB", "--memory-limit"},
      {"memory limit without a unit", kAmpInputs + " --global-batch 32 --memory-limit 17179869184",
       "--memory-limit: expected a size with a unit"},
      {"a flag the planner does not take", kAmpInputs + " --global-batch 32 --flag zero=1",
       "--flag 'zero=1': planner amp takes anneal"},
      {"a flag for a planner that takes none", kAmpInputs + " --global-batch 32 --planner hethub --flag anneal",
       "--flag 'anneal': planner hethub takes no flags"},
      {"a valued flag without its number", kAmpInputs + " --global-batch 32 --planner deepspeed --flag zero=x",
       "--flag 'zero=x': expected zero=N with N a whole number"},
      {"unknown framework", kAmpInputs + " --global-batch 32 --framework horovod",
       "--framework: expected megatron, deepspeed, fsdp or megatron-deepspeed, got 'horovod'"},
      {"unknown collective algorithm", kAmpInputs + " --global-batch 32 --collective-algorithm butterfly",
       "--collective-algorithm: expected ring, tree, hierarchical or nccl, got 'butterfly'"},
      {"autocast over Megatron-LM's 16-bit modules", kAmpInputs + " --global-batch 32 --autocast",
       "--autocast: needs a framework that runs Hugging Face's modules (fsdp or deepspeed); megatron's"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const RunResult r = run_hetsim("search " + c.args + " --top 0");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    const std::string last = last_line(r.output); // the error, after any progress
    CHECK(last.rfind("hetsim: ", 0) == 0);
    CHECK(last.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("search: when nothing fits, the refusal names the candidate that misses by the least")
{
  TempDir dir("nothing_fits");
  const std::string out = dir.file("candidates.json");
  const RunResult r     = run_hetsim("search --cluster " + kAmpCluster +
                                     " --model preset:llama-2-70b --global-batch 32 --planner megatron --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 2);
  // Every candidate, with what it needs beyond its fullest device, is in --out; here the fastest misses by more
  // than the closest.
  const nlohmann::json candidates = nlohmann::json::parse(read_file(out));
  REQUIRE(candidates.size() > 1);
  double least = std::numeric_limits<double>::infinity(), fastest_miss = 0;
  std::string least_device;
  for (const auto& c : candidates) {
    const auto& overflow = c.at("memory_overflow");
    const double over    = overflow.at("needed_bytes").get<double>() - overflow.at("capacity_bytes").get<double>();
    if (c.at("rank") == 1)
      fastest_miss = over;
    if (over < least) {
      least        = over;
      least_device = std::to_string(overflow.at("device").get<int>()) + " (" + overflow.at("gpu").get<std::string>();
    }
  }
  CHECK(least < fastest_miss);
  char expected[160];
  std::snprintf(expected, sizeof expected, "the closest needs %.2f GiB more than its fullest device, %s), holds",
                least / (1 << 30), least_device.c_str());
  CHECK(r.output.find(expected) != std::string::npos);
}

TEST_CASE("search: on AMP's heterogeneous cluster amp's best plan beats megatron's by at least 1.3x in simulation")
{
  TempDir dir("amp_vs_megatron");
  auto best_simulated = [&](const std::string& planner) {
    const std::string out = dir.file(planner + ".json");
    const RunResult r =
        run_hetsim("search " + kAmpInputs + " --global-batch 32 --planner " + planner + " --top 4 --out " + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_file(out))[0]["simulated_s"].get<double>();
  };
  const double amp      = best_simulated("amp");
  const double megatron = best_simulated("megatron");
  MESSAGE("best simulated iteration: amp " << amp << " s, megatron " << megatron << " s, " << megatron / amp << "x");
  CHECK(megatron / amp >= 1.3);
}

TEST_CASE("search: an --out in a directory that is not there is refused before the search, in one line")
{
  TempDir dir("search_out");
  const std::string out = dir.file("missing/plans.json");
  const RunResult r = run_hetsim("search " + kAmpInputs + " --global-batch 32 --planner megatron --out " + out);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--out " + out + ": its directory") != std::string::npos);
  CHECK(r.output.find("proposals") == std::string::npos); // nothing was searched
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("search --framework: every planner's best plan is one the framework's export launches")
{
  TempDir dir("search_framework");
  const RunResult list = run_hetsim("search --list-planners");
  REQUIRE(list.exit_code == 0);
  std::vector<std::string> planners;
  std::istringstream lines(list.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != ' ')
      planners.push_back(line.substr(0, line.find(' ')));
  REQUIRE(planners.size() >= 10);
  int exported = 0;
  for (const std::string framework : {"megatron", "deepspeed", "fsdp", "megatron-deepspeed"})
    for (const std::string& planner : planners) {
      CAPTURE(framework);
      CAPTURE(planner);
      const std::string best = dir.file(planner + "-" + framework + ".json");
      const RunResult search = run_hetsim("search " + kAmpInputs + " --global-batch 32 --top 1 --planner " + planner +
                                          " --framework " + framework + " --best " + best + " 2>&1");
      INFO(search.output);
      if (search.exit_code != 0) { // a planner whose every plan the framework refuses says so, in one line
        CHECK(search.exit_code == 2);
        CHECK(search.output.find("can launch") != std::string::npos);
        continue;
      }
      // An FSDP plan is launched as an FSDP script, by torchrun.
      const std::string format       = framework == "fsdp" ? "torchrun" : framework;
      const RunResult exported_files = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format " +
                                                  format + " --out " + dir.file(planner + "-" + framework));
      INFO(exported_files.output);
      CHECK(exported_files.exit_code == 0);
      ++exported;
    }
  CHECK(exported >= 30);
}

TEST_CASE("search --objective goodput: the simulated candidates by the tokens per second they keep under failures")
{
  TempDir dir("search_goodput");
  const std::string failures = std::string(HETSIM_SOURCE_DIR) + "/experiments/goodput/geo_illustrative.json";
  const RunResult refused = run_hetsim("search " + kAmpInputs + " --global-batch 32 --objective goodput");
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("--objective goodput: expected --failures FILE") != std::string::npos);

  const std::string out = dir.file("ranked.json");
  const RunResult r     = run_hetsim("search " + kAmpInputs + " --global-batch 32 --planner megatron --top 4 "
                                     "--objective goodput --failures " + failures + " --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto ranked = nlohmann::json::parse(read_file(out));
  double previous   = 1e300;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& goodput = ranked[i].at("goodput");
    const double kept   = goodput.at("goodput_tokens_per_s").get<double>();
    CHECK(kept <= previous);
    previous = kept;
    // What is kept is the simulated throughput times the fraction of the time whose work survives.
    CHECK(kept == doctest::Approx(ranked[i]["tokens_per_s"].get<double>() * goodput["useful_fraction"].get<double>()));
    CHECK(goodput["useful_fraction"].get<double>() < 1);
  }
  CHECK_FALSE(ranked[4].contains("goodput")); // estimated only
}
