// What a newcomer planning on a mixed cluster of older GPUs is told: which attention kernel runs where, how
// sure the step time is, whether memory fits with a margin, and that a calibration for another GPU is not used.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace hetsim::e2e;

namespace {

const char* kMixedCluster = R"({"name": "a100-v100", "regions": [{"nodes": [
  {"name": "ampere", "gpu": "A100-SXM4-80GB", "devices": 4, "nic": {"bandwidth_gbps": 100}},
  {"name": "volta", "gpu": "V100-SXM2-32GB", "devices": 4, "nic": {"bandwidth_gbps": 100}}]}]})";

// A Llama-2-style model cut to 8 blocks, trained with FlashAttention 2 as a Hugging Face user asks for it.
const char* kModel = R"({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5504,
  "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 8, "vocab_size": 32000,
  "max_position_embeddings": 4096, "seq_len": 2048, "torch_dtype": "float16", "attention": "flash2"})";

// Stage 0 on the A100s, stage 1 on the V100s.
const char* kPlan = R"({"tp": 1, "pp": 2, "dp": 4, "stage_starts": [0, 6], "micro_batch": 1, "global_batch": 32,
  "zero_stage": 0, "schedule": "1f1b", "recompute": false, "dtype": "fp16", "framework": "deepspeed"})";

} // namespace

TEST_CASE("a mixed A100 and V100 plan says which attention runs where, with a band and a memory verdict")
{
  TempDir dir("stack_fidelity");
  const std::string inputs = "--cluster " + dir.file("cluster.json", kMixedCluster) + " --model " +
                             dir.file("model.json", kModel) + " --plan " + dir.file("plan.json", kPlan);
  const std::string report_file = (dir.path / "report.json").string();
  const RunResult run = run_hetsim("simulate " + inputs + " --report " + report_file + " 2>&1");
  REQUIRE(run.exit_code == 0);
  // FlashAttention 2 does not run on the V100s: one line says so and what is priced instead.
  CHECK(run.output.find("flash2 does not run on V100-SXM2-32GB (sm70; FlashAttention 2 needs sm80 or later); "
                        "priced as mem_efficient") != std::string::npos);
  CHECK(run.output.find("attention on A100-SXM4-80GB") == std::string::npos); // it runs there, measured
  CHECK(run.output.find("iteration time band: ") != std::string::npos);
  CHECK(run.output.find("memory: fits: device") != std::string::npos);

  const nlohmann::json report = nlohmann::json::parse(read_file(report_file));
  const double point = report.at("iteration_time_s");
  const auto band    = report.at("iteration_time_s_band");
  REQUIRE(band.size() == 2);
  CHECK(band[0].get<double>() < point);
  CHECK(band[1].get<double>() > point);
  // The V100's constants are another generation's: the band is wide, and says why.
  CHECK(band[1].get<double>() > 1.4 * point);
  const std::string reasons = report.at("band_reasons").dump();
  CHECK(reasons.find("V100-SXM2-32GB constants carried over") != std::string::npos);
  CHECK(reasons.find("mem_efficient") != std::string::npos);
  CHECK(report.at("memory_verdict") == "fits");

  // The same model asking for the stack's default runs SDPA's choice on each GPU, with no fallback line.
  nlohmann::json sdpa = nlohmann::json::parse(kModel);
  sdpa["attention"]   = "sdpa";
  const std::string sdpa_inputs = "--cluster " + dir.file("cluster.json") + " --model " +
                                  dir.file("sdpa.json", sdpa.dump()) + " --plan " + dir.file("plan.json");
  const RunResult default_run = run_hetsim("simulate " + sdpa_inputs + " 2>&1");
  REQUIRE(default_run.exit_code == 0);
  CHECK(default_run.output.find("does not run on") == std::string::npos);
  CHECK(default_run.output.find("attention on V100-SXM2-32GB: mem_efficient; its speed there is unmeasured") !=
        std::string::npos);
}

TEST_CASE("a calibration for a GPU the cluster does not have is one warning line, not silence")
{
  TempDir dir("stack_calibration");
  const std::string calibration =
      dir.file("h100_cal.json", R"({"kernels": {"H100-SXM5-80GB": {"gemm_ceiling": 0.7, "memory_efficiency": 0.9,
                                               "launch_gap_s": 3e-6, "host_dispatch_s": 28e-6}}})");
  const std::string inputs = "--cluster " + dir.file("cluster.json", kMixedCluster) + " --model " +
                             dir.file("model.json", kModel) + " --plan " + dir.file("plan.json", kPlan);
  const RunResult run = run_hetsim("simulate " + inputs + " --calibration " + calibration + " 2>&1");
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("warning: calibration " + calibration +
                        " fits H100-SXM5-80GB, none of this cluster's GPUs (A100-SXM4-80GB, V100-SXM2-32GB)") !=
        std::string::npos);
  // An unknown attention kernel is one line naming the file, the field and the choices, exit code 2.
  nlohmann::json bad = nlohmann::json::parse(kModel);
  bad["attention"]   = "flash4";
  const std::string bad_model = dir.file("bad.json", bad.dump());
  const RunResult refused =
      run_hetsim("simulate --cluster " + dir.file("cluster.json") + " --model " + bad_model + " --plan " +
                 dir.file("plan.json") + " 2>&1");
  CHECK(refused.exit_code == 2);
  CHECK(last_line(refused.output).find("attention") != std::string::npos);
  CHECK(last_line(refused.output).find("flash2") != std::string::npos);
}

TEST_CASE("inspect gpus says, per GPU, where its constants come from and which attention kernel runs there")
{
  const RunResult gpus = run_hetsim("inspect gpus");
  REQUIRE(gpus.exit_code == 0);
  CHECK(gpus.output.find("H100-SXM5-80GB   sm90  constants measured (-7%/+9%") != std::string::npos);
  CHECK(gpus.output.find("A100-SXM4-80GB   sm80  constants from published runs (-9%/+15%") != std::string::npos);
  CHECK(gpus.output.find("V100-SXM2-16GB   sm70  constants carried over (-25%/+45%") != std::string::npos);
  CHECK(gpus.output.find("MI250X           -     constants of an unknown architecture") != std::string::npos);
  CHECK(gpus.output.find("attention sdpa runs mem_efficient, unmeasured") != std::string::npos);
  CHECK(gpus.output.find("attention te_fused runs cudnn, measured: H200 traces") != std::string::npos);
}

TEST_CASE("search gives every candidate a memory verdict and every simulated one a band")
{
  TempDir dir("stack_search");
  const std::string out = (dir.path / "candidates.json").string();
  const RunResult run   = run_hetsim("search --cluster " + dir.file("cluster.json", kMixedCluster) + " --model " +
                                   dir.file("model.json", kModel) + " --global-batch 32 --out " + out + " 2>&1");
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("best's iteration time band: ") != std::string::npos);
  const nlohmann::json candidates = nlohmann::json::parse(read_file(out));
  REQUIRE(!candidates.empty());
  int banded = 0;
  for (const auto& c : candidates) {
    const std::string verdict = c.at("memory_verdict");
    CHECK((verdict == "fits" || verdict == "at risk" || verdict == "does not fit"));
    CHECK((verdict == "does not fit") == !c.at("fits").get<bool>());
    if (c.at("simulated_s").is_null())
      continue;
    ++banded;
    const double simulated = c.at("simulated_s");
    CHECK(c.at("iteration_time_s_band")[0].get<double>() < simulated);
    CHECK(c.at("iteration_time_s_band")[1].get<double>() > simulated);
    CHECK(c.contains("overlaps_best"));
  }
  CHECK(banded > 0);
  CHECK_FALSE(candidates[0].at("overlaps_best").get<bool>()); // the best does not overlap itself
}

TEST_CASE("search told an older PyTorch than Hopper was measured with widens the band, and says why")
{
  TempDir dir("stack_release");
  const std::string inputs =
      "search --cluster " +
      dir.file("cluster.json", R"({"name": "h100", "regions": [{"nodes": [{"name": "n", "gpu": "H100-SXM5-80GB",
        "devices": 4}]}]})") +
      " --model " + dir.file("model.json", kModel) + " --global-batch 16 --framework fsdp --top 2";
  const RunResult measured = run_hetsim(inputs + " 2>&1");
  REQUIRE(measured.exit_code == 0);
  CHECK(measured.output.find("run with 2.1") == std::string::npos);
  const RunResult older = run_hetsim(inputs + " --pytorch 2.1.0+cu121 2>&1");
  REQUIRE(older.exit_code == 0);
  CHECK(older.output.find("H100-SXM5-80GB constants carried over (measured with PyTorch 2.11, run with 2.1)") !=
        std::string::npos);
  const RunResult bad = run_hetsim(inputs + " --pytorch two 2>&1");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--pytorch: expected a PyTorch release") != std::string::npos);
}

TEST_CASE("FSDP runs the model in 16-bit as MixedPrecision does; a plain PyTorch loop under autocast says so")
{
  TempDir dir("stack_precision");
  const std::string cluster = dir.file("cluster.json", R"({"name": "a100", "regions": [{"nodes": [{"name": "n",
        "gpu": "A100-SXM4-80GB", "devices": 8}]}]})");
  auto peak = [&](const std::string& framework) {
    const std::string plan = dir.file("plan.json", R"({"tp": 1, "pp": 1, "dp": 8, "micro_batch": 2,
        "global_batch": 16, "zero_stage": 3, "recompute": false, "dtype": "bf16", "framework": )" + framework + "}");
    const std::string report = (dir.path / "report.json").string();
    const RunResult run = run_hetsim("simulate --cluster " + cluster + " --model " + dir.file("model.json", kModel) +
                                     " --plan " + plan + " --report " + report + " 2>&1");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    return nlohmann::json::parse(read_file(report)).at("devices")[0].at("peak_memory_bytes").get<double>();
  };
  const double mixed_precision = peak(R"("fsdp")");
  const double under_autocast  = peak(R"({"name": "fsdp", "autocast": true})");
  // Autocast keeps fp32 weights' 16-bit copies for the pass (2 bytes per parameter of the blocks' products, here
  // about 0.8 GB) and an fp32 residual stream; MixedPrecision gathers 16-bit weights and keeps neither.
  CHECK(under_autocast > mixed_precision + 0.8e9);
}
