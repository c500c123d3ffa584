/// End-to-end: the `hetsim` binary on real inputs, compared by numbers and exit codes, not stdout diffs.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

using namespace hetsim::e2e;

/// Writes a plan that is the default plan with one field replaced.
std::string default_plan_with(const TempDir& dir, const std::string& field, const nlohmann::json& value)
{
  auto plan   = nlohmann::json::parse(read_file(fs::path(HETSIM_SOURCE_DIR) / "presets/plan/gpt3-1.3b-case5.json"));
  plan[field] = value;
  return dir.file("plan.json", plan.dump());
}

const std::string kDefaultInputs = "--cluster preset:case5_worldwide_geo --model preset:gpt3-1.3b";

/// The default scenario simulated with `option` FILE (a file of the repository) and a report: the report, and the
/// command's output in `output`.
nlohmann::json default_report_with(const std::string& option, const std::string& file, std::string& output)
{
  TempDir dir("with_" + option.substr(2));
  const auto report = dir.file("report.json");
  const RunResult r = run_hetsim("simulate " + option + " " + std::string(HETSIM_SOURCE_DIR) + "/" + file +
                                 " --report " + report);
  output = r.output;
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_file(report));
}

} // namespace

TEST_CASE("the default scenario runs and reports sensible numbers")
{
  TempDir dir("default");
  const auto report = dir.file("report.json");
  const auto trace  = dir.file("trace.json");
  const RunResult r = run_hetsim("simulate --report " + report + " --trace " + trace);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(report));
  CHECK(j["iteration_time_s"].get<double>() > 0);
  CHECK(j["mfu"].get<double>() > 0);
  CHECK(j["mfu"].get<double>() < 0.6);
  CHECK(j["devices"].size() == 64);
  // Tokens per second is exactly the global batch over the iteration time.
  CHECK(j["tokens_per_s"].get<double>() ==
        doctest::Approx(1024.0 * 2048 / j["iteration_time_s"].get<double>()).epsilon(1e-9));
  for (const auto& d : j["devices"]) {
    CHECK(d["compute_s"].get<double>() > 0);
    CHECK(d["peak_memory_bytes"].get<double>() < 16.0 * (1ull << 30));
    // The peak by term adds up to it (each a whole number of bytes, rounded on its own: 7 terms differ by at
    // most 3.5 bytes); recompute keeps activations well under the model states.
    REQUIRE(d["peak_memory_bytes"].is_number_integer());
    long long terms = 0;
    for (const auto& [term, bytes] : d["memory_bytes"].items()) {
      REQUIRE(bytes.is_number_integer());
      terms += bytes.get<long long>();
    }
    CHECK(std::llabs(terms - d["peak_memory_bytes"].get<long long>()) <= 3);
    // NCCL's buffers per communicator: dp 8 and pp 8 over single-GPU nodes, no tensor parallelism.
    const auto& nccl = d["nccl_memory_bytes"];
    CHECK(nccl["tensor_parallel"].get<long long>() == 0);
    CHECK(nccl["data_parallel"].get<long long>() > 0);
    CHECK(nccl["pipeline"].get<long long>() > 0);
    CHECK(std::llabs(nccl["tensor_parallel"].get<long long>() + nccl["data_parallel"].get<long long>() +
                     nccl["pipeline"].get<long long>() + nccl["experts"].get<long long>() -
                     nccl["total"].get<long long>()) <= 2);
    CHECK(nccl["total"].get<long long>() < d["memory_bytes"]["framework"].get<long long>());
    CHECK(d["memory_bytes"]["optimizer"].get<double>() > 0);
    CHECK(d["compute_s"].get<double>() + d["idle_s"].get<double>() <= j["iteration_time_s"].get<double>() * (1 + 1e-9));
  }
  const auto t = nlohmann::json::parse(read_file(trace));
  CHECK(t["traceEvents"].size() > 64);
}

TEST_CASE("simulate --failures: the default scenario's goodput from the what-if file's rates and its checkpoint")
{
  std::string output;
  const auto j = default_report_with("--failures", "experiments/goodput/geo_illustrative.json", output);
  CHECK(output.find("under failures (") != std::string::npos);
  const auto& g = j.at("goodput");
  // 64 V100 at 50,000 h, 64 one-GPU nodes at 20,000 h, the 28 pairs of the 8 regions at 2,000 h.
  CHECK(g["mtbf_s"].get<double>() == doctest::Approx(3600 / (64 / 50000.0 + 64 / 20000.0 + 28 / 2000.0)));
  CHECK(g["expected_failures"].get<double>() == doctest::Approx(30 * 86400 / g["mtbf_s"].get<double>()));
  // GPT-3 1.3B in fp16 with Adam: 14 bytes a parameter, written at the storage's 5 GB/s (each node's share,
  // 1/64, fits its 2 Gb/s interface sooner), read back after the 15-minute restart.
  CHECK(g["checkpoint_blocking_s"].get<double>() == doctest::Approx(g["checkpoint_bytes"].get<double>() / 5e9));
  CHECK(g["restart_s"].get<double>() == doctest::Approx(900 + g["checkpoint_blocking_s"].get<double>()));
  CHECK(g["interval_s"].get<double>() ==
        doctest::Approx(g["interval_iterations"].get<double>() * j["iteration_time_s"].get<double>()));
  CHECK(g["useful_fraction"].get<double>() >= g["young_useful_fraction"].get<double>());
  CHECK(g["goodput_tokens_per_s"].get<double>() ==
        doctest::Approx(j["tokens_per_s"].get<double>() * g["useful_fraction"].get<double>()));
  // Printed as the report prints throughput: "goodput 46,132 tokens/s", not "4.613e+04".
  const double goodput = g["goodput_tokens_per_s"].get<double>();
  REQUIRE(goodput >= 1000);
  std::string grouped = std::to_string(static_cast<long long>(std::llround(goodput)));
  for (int at = static_cast<int>(grouped.size()) - 3; at > 0; at -= 3)
    grouped.insert(static_cast<std::size_t>(at), ",");
  CHECK(output.find("goodput " + grouped + " tokens/s") != std::string::npos);
}

TEST_CASE("simulate --slowdowns: the iteration with them, without them and with each alone")
{
  std::string output;
  const auto j  = default_report_with("--slowdowns", "docs/examples/slowdowns.json", output);
  const auto& s = j.at("slowdowns");
  CHECK(s["iteration_time_s"].get<double>() == j["iteration_time_s"].get<double>());
  CHECK(s["without_s"].get<double>() < s["iteration_time_s"].get<double>());
  REQUIRE(s["alone"].size() == 2);
  // The WAN link, on the geo pipeline's critical path, sets the iteration; the throttled device does not.
  const double link_alone   = s["alone"][1]["iteration_time_s"].get<double>() - s["without_s"].get<double>();
  const double device_alone = s["alone"][0]["iteration_time_s"].get<double>() - s["without_s"].get<double>();
  CHECK(s["alone"][1]["slowdown"].get<std::string>().rfind("link Oregon <-> Virginia", 0) == 0);
  CHECK(link_alone > 100 * std::abs(device_alone));
  CHECK(output.find("folded:") == std::string::npos); // a slowed device stands for no other
}

TEST_CASE("determinism: two runs give identical report and trace bytes")
{
  TempDir dir("determinism");
  for (int run = 0; run < 2; ++run) {
    const RunResult r = run_hetsim("simulate --report " + dir.file("r" + std::to_string(run) + ".json") + " --trace " +
                                   dir.file("t" + std::to_string(run) + ".json"));
    REQUIRE(r.exit_code == 0);
  }
  CHECK(read_file(dir.path / "r0.json") == read_file(dir.path / "r1.json"));
  CHECK(read_file(dir.path / "t0.json") == read_file(dir.path / "t1.json"));
}

TEST_CASE("bad input: one line naming the file and the field, exit code 2")
{
  TempDir dir("bad");
  struct Case {
    const char* what;
    std::string args;
    std::string expected;
  };
  const std::string plan_flag = " --plan ";
  std::vector<Case> cases = {
      {"unknown GPU", "--cluster " + dir.file("c1.json", R"({"regions":[{"nodes":[{"gpu":"A10x","devices":64}]}]})") +
                          " --model preset:gpt3-1.3b --plan preset:gpt3-1.3b-case5",
       "c1.json: regions[0].nodes[0].gpu: unknown GPU 'A10x'"},
      {"missing field", "--cluster " + dir.file("c2.json", R"({"regions":[{"nodes":[{"gpu":"T4"}]}]})") +
                            " --model preset:gpt3-1.3b --plan preset:gpt3-1.3b-case5",
       "c2.json: regions[0].nodes[0]: missing required field 'devices'"},
      {"zero bandwidth", "--cluster " + dir.file("c3.json", R"({"regions":[{"nodes":[{"gpu":"T4","devices":64,"nic":{"bandwidth_gbps":0}}]}]})") +
                             " --model preset:gpt3-1.3b --plan preset:gpt3-1.3b-case5",
       "c3.json: regions[0].nodes[0].nic.bandwidth_gbps: expected a positive number"},
      {"invalid JSON", "--cluster " + dir.file("c4.json", "{\"regions\": [") + " --model preset:gpt3-1.3b --plan preset:gpt3-1.3b-case5",
       "c4.json: invalid JSON"},
      {"degrees", kDefaultInputs + plan_flag + default_plan_with(dir, "dp", 4), "plan.json"},
      {"missing file", kDefaultInputs + " --plan " + dir.file("nope.json"), "nope.json: cannot open file"},
      {"partial inputs", "simulate --cluster preset:case5_worldwide_geo", "give --cluster, --model and --plan together"},
      {"kernels without a trace", "simulate --trace-kernels", "--trace-kernels: expected --trace FILE"},
      {"unknown preset", "--cluster preset:moon --model preset:gpt3-1.3b --plan preset:gpt3-1.3b-case5",
       "unknown cluster preset 'moon'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string args = c.args.rfind("simulate", 0) == 0 ? c.args : "simulate " + c.args;
    const RunResult r      = run_hetsim(args);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expected) != std::string::npos);
    INFO(r.output);
    // One line: the message and its newline.
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
}

TEST_CASE("a model saved in bf16 searches in bf16, and a GPU without bf16 is named")
{
  TempDir dir("dtype");
  const std::string model = std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/llama-3.2-1b.json";
  const std::string v100s = dir.file("v100.json", R"({"regions":[{"nodes":[{"gpu":"V100","devices":8}]}]})");
  const std::string a100s = dir.file("a100.json", R"({"regions":[{"nodes":[{"gpu":"A100","devices":8}]}]})");
  const std::string search = "search --model " + model + " --seq-len 1024 --global-batch 64 --planner megatron --top 1";

  const RunResult refused = run_hetsim(search + " --cluster " + v100s);
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("llama-3.2-1b.json: torch_dtype: bf16 needs bf16 tensor cores, which device 0's "
                            "V100-SXM2-16GB (" + v100s + ": regions[0].nodes[0].gpu) lacks: use fp16 or fp32 "
                            "(--dtype overrides the model's dtype)") != std::string::npos);
  CHECK(run_hetsim(search + " --cluster " + v100s + " --dtype fp16").exit_code == 0);
  const fs::path best_file = dir.path / "best.json";
  const RunResult bf16     = run_hetsim(search + " --cluster " + a100s + " --best " + best_file.string());
  CHECK(bf16.exit_code == 0);
  std::ifstream best(best_file);
  CHECK(nlohmann::json::parse(best).at("dtype") == "bf16");
}

TEST_CASE("a plan that does not fit names the device and the bytes over")
{
  TempDir dir("oom");
  const RunResult r = run_hetsim("simulate " + kDefaultInputs + " --plan " + default_plan_with(dir, "recompute", false));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("device") != std::string::npos);
  CHECK(r.output.find("over") != std::string::npos);
  // The field to change: the preset's GPU.
  CHECK(r.output.find("; its GPU is set by preset:case5_worldwide_geo: gpu") != std::string::npos);
}

TEST_CASE("--trace-devices keeps the trace to the devices named, arrows between them included")
{
  TempDir dir("trace_devices");
  const auto trace  = dir.file("trace.json");
  const RunResult r = run_hetsim("simulate --trace " + trace + " --trace-devices 0,8-15");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(read_file(trace));
  int slices = 0, arrows = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M")
      continue;
    const int pid = e["pid"].get<int>();
    CHECK((pid == 0 || (pid >= 8 && pid <= 15)));
    slices += e["ph"] == "X";
    arrows += e["ph"] == "s";
  }
  CHECK(slices > 0);
  CHECK(arrows > 0); // device 0 (stage 0) sends to devices 8-15 (stage 1)
  const RunResult bad = run_hetsim("simulate --trace " + trace + " --trace-devices 64");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--trace-devices: expected device ids or ranges such as 0,4-7, each below 64, got '64'") !=
        std::string::npos);
}

TEST_CASE("the default scenario folds its replicas, --exact replays every device, and the trace can keep the "
          "replayed ones")
{
  TempDir dir("fold");
  const auto folded_report = dir.file("folded.json");
  const auto exact_report  = dir.file("exact.json");
  const auto trace         = dir.file("trace.json");
  const RunResult folded   = run_hetsim("simulate --report " + folded_report + " --trace " + trace +
                                        " --trace-devices representatives");
  INFO(folded.output);
  REQUIRE(folded.exit_code == 0);
  // Eight replicas per region in two blocks of four: replicas 0 and 4 of every stage.
  CHECK(folded.output.find("folded: replays 16 of 64 devices") != std::string::npos);
  const RunResult exact = run_hetsim("simulate --exact --report " + exact_report);
  REQUIRE(exact.exit_code == 0);
  CHECK(exact.output.find("folded:") == std::string::npos);
  const auto a = nlohmann::json::parse(read_file(folded_report));
  const auto b = nlohmann::json::parse(read_file(exact_report));
  CHECK(a["iteration_time_s"].get<double>() == doctest::Approx(b["iteration_time_s"].get<double>()).epsilon(0.01));
  CHECK(a["devices"].size() == 64); // every device in the report, folded or not
  std::set<int> pids;
  const auto doc = nlohmann::json::parse(read_file(trace));
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      pids.insert(e["pid"].get<int>());
  CHECK(pids.size() == 16);
  CHECK(pids.count(0) == 1);
  CHECK(pids.count(4) == 1);
  CHECK(pids.count(1) == 0);
}

TEST_CASE("outputs never overwrite inputs")
{
  TempDir dir("clobber");
  const std::string plan   = default_plan_with(dir, "zero_stage", 0);
  const std::string before = read_file(plan);
  const RunResult r        = run_hetsim("simulate " + kDefaultInputs + " --plan " + plan + " --report " + plan);
  CHECK(r.exit_code == 2);
  CHECK(read_file(plan) == before);
}

TEST_CASE("inspect and help")
{
  const RunResult cluster = run_hetsim("inspect cluster preset:case5_worldwide_geo");
  CHECK(cluster.exit_code == 0);
  CHECK(cluster.output.find("64 devices") != std::string::npos);
  const RunResult model = run_hetsim("inspect model preset:llama-2-7b");
  CHECK(model.exit_code == 0);
  CHECK(model.output.find("6.7") != std::string::npos);
  const RunResult gpus = run_hetsim("inspect gpus");
  CHECK(gpus.exit_code == 0);
  CHECK(gpus.output.find("H100-SXM5-80GB") != std::string::npos);
  CHECK(gpus.output.find("V100, V100-16GB") != std::string::npos); // the aliases a cluster file may use
  CHECK(run_hetsim("inspect model").exit_code == 2);
  const RunResult frameworks = run_hetsim("inspect frameworks");
  CHECK(frameworks.exit_code == 0);
  CHECK(frameworks.output.find("DeepSpeed v0.17.4, deepspeed/runtime/zero/config.py:109") != std::string::npos);
  CHECK(frameworks.output.find("partitioned_sends           true") != std::string::npos);
  CHECK(frameworks.output.find("megatron-deepspeed\n") != std::string::npos);
  CHECK(frameworks.output.find("Megatron-DeepSpeed 4efb479d, pretrain_gpt.py:76") != std::string::npos);
  CHECK(run_hetsim("inspect frameworks x.json").exit_code == 2);
  const RunResult help = run_hetsim("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("simulate") != std::string::npos);
  CHECK(help.output.find("inspect") != std::string::npos);
  CHECK(run_hetsim("frobnicate").exit_code == 2);
  // A usage mistake is one line, like every other input error.
  for (const char* mistake : {"frobnicate", "simulate --seed x", "search --global-batch", ""}) {
    CAPTURE(mistake);
    const RunResult r = run_hetsim(mistake);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.rfind("hetsim: ", 0) == 0);
  }
}

TEST_CASE("the bottleneck is the slow GPU the others wait for, wherever it sits")
{
  // Three A100s and one V100 in data parallel: the A100s finish their passes first and wait in the gradient
  // all-reduce, their waits counted as communication in flight; the V100's compute sets the iteration time.
  TempDir dir("bottleneck");
  const std::string plan = dir.file("plan.json", R"({"tp": 1, "pp": 1, "dp": 4, "micro_batch": 1, "global_batch": 8,
    "zero_stage": 0, "schedule": "1f1b", "recompute": true, "dtype": "fp16"})");
  for (const bool v100_first : {false, true}) {
    CAPTURE(v100_first);
    const std::string a100 = R"({"name": "a", "gpu": "A100-SXM4-80GB", "devices": 3})";
    const std::string v100 = R"({"name": "v", "gpu": "V100-SXM2-16GB", "devices": 1})";
    const std::string cluster =
        dir.file("cluster.json", R"({"name": "mixed", "regions": [{"name": "dc", "nodes": [)" +
                                     (v100_first ? v100 + ", " + a100 : a100 + ", " + v100) + "]}]}");
    const std::string report = dir.file("report.json");
    const RunResult r = run_hetsim("simulate --cluster " + cluster + " --model preset:gpt2-medium --plan " + plan +
                                   " --report " + report);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto json = nlohmann::json::parse(read_file(report));
    CHECK(json["bottleneck"]["device"] == (v100_first ? 0 : 3));
    CHECK(json["bottleneck"]["bound"] == "compute");
    // Most of the V100's compute is on the critical path (the rest overlaps the gradient all-reduces, whose
    // chain then carries the path).
    const auto& slow = json["devices"][v100_first ? 0 : 3];
    CHECK(json["bottleneck"]["critical_compute_s"].get<double>() > 0.5 * slow["compute_s"].get<double>());
    CHECK(r.output.find("bottleneck: dev" + std::to_string(v100_first ? 0 : 3) + " (V100-SXM2-16GB") !=
          std::string::npos);
  }
}
