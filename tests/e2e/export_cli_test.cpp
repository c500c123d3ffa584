/// End-to-end: `hetsim export` of the best plan of every planner family, in every format.

#include "cli_runner.hpp"
#include "export_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

using namespace hetsim::e2e;

namespace {

const std::string kAmpCluster = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/cluster.json";
const std::string kAmpModel   = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/gpt2-medium-amp.json";
const std::string kAmpInputs  = "--cluster " + kAmpCluster + " --model " + kAmpModel;

} // namespace

TEST_CASE("export: every planner's best plan in every format, or one line naming the field it cannot express")
{
  TempDir dir("export");
  if (!has_shellcheck())
    MESSAGE("shellcheck not installed: scripts are only parsed (bash -n)");
  int checked = 0;
  for (const std::string framework : {"megatron", "deepspeed", "megatron-deepspeed"})
    for (const std::string planner : {"amp", "hethub", "megatron", "random", "poplar", "deepspeed", "whale", "osdp",
                                      "dtfm", "zero3"}) {
      CAPTURE(framework);
      CAPTURE(planner);
      const std::string best = dir.file(planner + "-" + framework + ".json");
      const RunResult search = run_hetsim("search " + kAmpInputs + " --global-batch 32 --top 0 --planner " + planner +
                                          " --framework " + framework + " --best " + best);
      INFO(search.output);
      if (search.exit_code != 0) {
        // Megatron-DeepSpeed's fixed stages leave a planner with none (HETHUB's); Poplar and Whale size each
        // device's batch to it, which neither Megatron-LM nor Megatron-DeepSpeed runs.
        const bool per_device_batches = planner == "poplar" || planner == "whale";
        CHECK((framework == "megatron-deepspeed" || (framework == "megatron" && per_device_batches)));
        CHECK(search.output.find("can launch") != std::string::npos);
        continue;
      }
      const auto plan = nlohmann::json::parse(read_file(best));
      for (const std::string& format : {framework, std::string("torchrun"), std::string("slurm")}) {
        CAPTURE(format);
        const bool launcher = format == "torchrun" || format == "slurm";
        const std::string out = (dir.path / (planner + "-" + framework + "-" + format)).string();
        const RunResult r = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format " + format + " --out " + out);
        INFO(r.output);
        const bool per_replica_batches = plan["micro_batch"].is_array();
        // The planners of a framework's own family always give a plan it runs.
        if (planner == framework)
          CHECK(r.exit_code == 0);
        if (r.exit_code == 2) {
          // Only the frameworks refuse, and only with the plan field at fault.
          CHECK(!launcher);
          CHECK(r.output.find("hetsim: " + best + ": ") == 0);
          CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
          continue;
        }
        REQUIRE(r.exit_code == 0);
        // Poplar's and Whale's per-replica batches are no framework setting; a launcher runs any command.
        CHECK((launcher || !per_replica_batches));
        for (const std::string& objection : export_objections(format, out, plan))
          FAIL_CHECK(objection);
        if (!launcher) {
          ++checked;
          continue;
        }
        // The rank map runs every virtual rank once, on the device the plan places it on.
        const auto map = nlohmann::json::parse(read_file(fs::path(out) / "rank_map.json"));
        REQUIRE(map["ranks"].size() == plan["placement"].size());
        std::set<int> devices;
        for (std::size_t rank = 0; rank < map["ranks"].size(); ++rank) {
          CHECK(map["ranks"][rank]["rank"] == rank);
          CHECK(map["ranks"][rank]["device"] == plan["placement"][rank]);
          devices.insert(map["ranks"][rank]["device"].get<int>());
        }
        CHECK(devices.size() == plan["placement"].size());
      }
    }
  CHECK(checked >= 12); // the framework's own planners always export, and most others do
}

TEST_CASE("export: amp's uneven stages reach Megatron-LM as a pipeline layout, and torchrun starts each rank on its GPU")
{
  TempDir dir("export_amp");
  const std::string best = dir.file("best.json");
  REQUIRE(run_hetsim("search " + kAmpInputs + " --global-batch 32 --top 0 --planner amp --best " + best).exit_code == 0);
  const RunResult megatron = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format megatron");
  INFO(megatron.output);
  REQUIRE(megatron.exit_code == 0);
  CHECK(megatron.output.find("MEGATRON_ARGS=(") != std::string::npos);
  // Blocks per stage (layer 0 is the embedding, the last the head): a layout exactly when they differ.
  const auto plan = nlohmann::json::parse(read_file(best));
  const auto starts = plan["stage_starts"].get<std::vector<int>>();
  const int layers  = 24 + 2;
  std::set<int> blocks;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const int end = s + 1 < starts.size() ? starts[s + 1] : layers;
    blocks.insert(std::min(end, layers - 1) - std::max(starts[s], 1));
  }
  CHECK((megatron.output.find("--pipeline-model-parallel-layout 'E") != std::string::npos) == (blocks.size() > 1));

  // A stand-in for torchrun that starts the node's processes as torchrun does (LOCAL_RANK set, the command after
  // its options), so that what each process ends up with can be read. Debian 12's own torchrun (python3-torch
  // 1.13) cannot start any process under its Python 3.11 ("'NoneType' object has no attribute 'get'" in
  // elastic/multiprocessing), and CI has no other.
  const std::string out = (dir.path / "torchrun").string();
  REQUIRE(run_hetsim("export " + kAmpInputs + " --plan " + best + " --format torchrun --out " + out).exit_code == 0);
  const auto status = fs::status(fs::path(out) / "launch_node0.sh");
  CHECK((status.permissions() & fs::perms::owner_exec) != fs::perms::none);
  const fs::path bin = dir.path / "bin";
  fs::create_directories(bin);
  const std::string stub = dir.file("bin/torchrun", "#!/usr/bin/env bash\n"
                                                    "nproc=$4; while [ \"$1\" != --no_python ]; do shift; done; shift\n"
                                                    "for ((l = 0; l < nproc; ++l)); do LOCAL_RANK=$l \"$@\"; done\n");
  fs::permissions(stub, fs::perms::owner_all);
  const auto map = nlohmann::json::parse(read_file(fs::path(out) / "rank_map.json"));
  for (std::size_t node = 0; node < 4; ++node) {
    const RunResult r = run_command("PATH=" + bin.string() + ":$PATH bash " +
                                    (fs::path(out) / ("launch_node" + std::to_string(node) + ".sh")).string() +
                                    " 10.0.0.1 29500 -- bash -c 'echo $RANK $CUDA_VISIBLE_DEVICES $LOCAL_RANK'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::istringstream lines(r.output);
    int rank = 0, local_rank = 0;
    std::string gpus;
    while (lines >> rank >> gpus >> local_rank) {
      // Process l of the node is the plan's rank, and CUDA's device l is that rank's GPU.
      const auto& entry = map["ranks"][rank];
      CHECK(entry["node_rank"] == node);
      CHECK(entry["local_rank"] == local_rank);
      CHECK(gpus.substr(2 * local_rank, 1) == std::to_string(entry["gpu"].get<int>()));
    }
  }
  const RunResult usage = run_command("bash " + (fs::path(out) / "launch_node0.sh").string() + " 10.0.0.1 python");
  CHECK(usage.exit_code == 2);
  CHECK(usage.output.find("usage:") != std::string::npos);
}

TEST_CASE("export: a plan keeps the sequence length it was searched at")
{
  TempDir dir("export_seq_len");
  const std::string best = dir.file("best.json");
  REQUIRE(run_hetsim("search " + kAmpInputs + " --seq-len 512 --global-batch 32 --top 0 --planner megatron --best " +
                     best).exit_code == 0);
  CHECK(nlohmann::json::parse(read_file(best)).at("seq_len") == 512);
  // Without --seq-len the export trains on the plan's 512 tokens, not the model file's 1,024.
  const RunResult megatron = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format megatron");
  INFO(megatron.output);
  REQUIRE(megatron.exit_code == 0);
  CHECK(megatron.output.find("--seq-length 512") != std::string::npos);
  // And simulate replays those sequences: 32 x 512 tokens an iteration.
  const std::string report = dir.file("report.json");
  REQUIRE(run_hetsim("simulate " + kAmpInputs + " --plan " + best + " --report " + report).exit_code == 0);
  CHECK(nlohmann::json::parse(read_file(report)).at("seq_len") == 512);
  // A --seq-len that contradicts the plan is one line.
  const RunResult contradicts = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format megatron --seq-len 1024");
  CHECK(contradicts.exit_code == 2);
  CHECK(contradicts.output.find("--seq-len 1024: the plan " + best + " was made for 512 tokens per sequence") !=
        std::string::npos);
  CHECK(std::count(contradicts.output.begin(), contradicts.output.end(), '\n') == 1);
}

TEST_CASE("export: refuses an unknown format and never writes over an input")
{
  TempDir dir("export_refusals");
  const std::string best = dir.file("best.json");
  REQUIRE(run_hetsim("search " + kAmpInputs + " --global-batch 32 --top 0 --planner megatron --best " + best).exit_code == 0);
  const RunResult format = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format fairseq");
  CHECK(format.exit_code == 2);
  CHECK(format.output.find("--format: expected megatron, deepspeed, megatron-deepspeed, torchrun or slurm, got 'fairseq'") != std::string::npos);
  // --out onto a file: the directory cannot be made, and the file stays.
  const std::string before = read_file(best);
  const RunResult onto = run_hetsim("export " + kAmpInputs + " --plan " + best + " --format deepspeed --out " + best);
  CHECK(onto.exit_code == 2);
  CHECK(read_file(best) == before);
}

TEST_CASE("export: a plan that leaves collectives to NCCL launches with the NCCL environment it was simulated under")
{
  TempDir dir("export_nccl");
  const std::string cluster = dir.file("cluster.json", R"({"name": "dgx", "regions": [{"nodes": [{"name": "n",
      "gpu": "A100-SXM4-80GB", "devices": 8, "repeat": 2, "intra_node": {"bandwidth_GBps": 300, "fabric": "nvswitch"},
      "nic": {"bandwidth_gbps": 1600}}]}]})");
  const std::string inputs = "--cluster " + cluster + " --model preset:gpt3-1.3b";
  auto plan_with = [&](const std::string& name, const std::string& nccl) {
    return dir.file(name, R"({"tp": 8, "pp": 1, "dp": 2, "micro_batch": 1, "global_batch": 16, "zero_stage": 0,
        "recompute": true, "dtype": "fp16", "collective_algorithm": "nccl")" + nccl + "}");
  };
  const std::string chosen = plan_with("chosen.json", "");
  const std::string narrow = plan_with("narrow.json", R"(, "nccl": {"NCCL_PROTO": "Simple", "NCCL_MAX_NCHANNELS": 2, "NCCL_BUFFSIZE": 8388608})");
  auto iteration = [&](const std::string& plan) {
    const std::string report = (dir.path / "report.json").string();
    const RunResult r = run_hetsim("simulate " + inputs + " --plan " + plan + " --report " + report);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_file(report)).at("iteration_time_s").get<double>();
  };
  // Two channels of the communicator's 24 carry the tensor-parallel all-reduces: the step is slower.
  CHECK(iteration(narrow) > iteration(chosen));

  const std::string out = (dir.path / "torchrun").string();
  const RunResult r = run_hetsim("export " + inputs + " --plan " + narrow + " --format torchrun --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::string scripts;
  for (const auto& entry : std::filesystem::directory_iterator(out))
    scripts += read_file(entry.path().string());
  CHECK(scripts.find("export NCCL_PROTO='Simple'") != std::string::npos);
  CHECK(scripts.find("export NCCL_MAX_NCHANNELS=2") != std::string::npos);
  CHECK(scripts.find("export NCCL_BUFFSIZE=8388608") != std::string::npos);
  CHECK(scripts.find("NCCL_ALGO") == std::string::npos); // NCCL chooses its algorithm
}
