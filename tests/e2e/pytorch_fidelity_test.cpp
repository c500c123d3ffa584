// Hugging Face GPT-2 medium trained as a PyTorch user trains it on one H100 (tests/data/h100: fp32 weights, bf16
// autocast, fused AdamW, SDPA, eager mode, with and without gradient checkpointing) against HetSim's prediction
// for the same config and plan (framework fsdp: Hugging Face's modules, eager, under autocast): step time,
// peak memory (the caching allocator's reserve plus about 0.5 GiB of CUDA context) and the fit / out-of-memory
// verdict of every case, uncalibrated and calibrated on the profiler traces of two of them.

#include "cli_runner.hpp"
#include "core/cluster_json.hpp"
#include "core/json_input.hpp"
#include "core/units.hpp"
#include "costmodel/calibration.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/framework.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/plan/problem.hpp"
#include "traces/pytorch_fit.hpp"
#include "traces/pytorch_trace.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace hetsim;

namespace {

const std::string kData = std::string(HETSIM_SOURCE_DIR) + "/tests/data/h100/";

/// One measured case of pytorch/gpt2-medium-steps.json.
struct MeasuredCase {
  std::string tag;
  bool ran = false;
  double step_s = 0, memory_bytes = 0; ///< median step; reserved peak + the CUDA context
};

std::vector<MeasuredCase> gpt2_cases()
{
  std::vector<MeasuredCase> cases;
  for (const auto& row : JsonInput::parse_file(kData + "pytorch/gpt2-medium-steps.json")) {
    MeasuredCase c;
    c.tag = row.at("tag").get<std::string>();
    c.ran = row.at("status").get<std::string>() == "ok";
    if (c.ran) {
      c.step_s       = row.at("step_s").get<double>();
      c.memory_bytes = row.at("peak_reserved_bytes").get<double>() + 0.5 * units::kGiB;
    }
    cases.push_back(c);
  }
  return cases;
}

struct Prediction {
  double step_s = 0, memory_bytes = 0;
  bool fits = false;
};

Prediction predict(const std::string& tag, const costmodel::Calibration* calibration)
{
  const Cluster cluster         = load_cluster(kData + "inputs/h100x1.json");
  const models::Workload given  = models::load_workload(kData + "inputs/gpt2-medium.json");
  const strategies::Plan plan   = strategies::load_plan(kData + "inputs/plan-" + tag + ".json", cluster, given);
  const models::Workload model  = strategies::run_by(given, plan.framework, plan.dtype);
  const strategies::Problem problem = strategies::problem_for_plan(cluster, model, plan);
  const auto memory             = strategies::plan_memory(plan, problem);
  sim::SimOptions options;
  options.calibration = calibration;
  Prediction p;
  p.step_s       = sim::simulate(plan, problem, strategies::lower(plan, problem), options).report.iteration_time_s;
  p.memory_bytes = memory[0].total_bytes();
  p.fits         = strategies::largest_overflow(memory) == nullptr;
  return p;
}

/// Every case within 10% on time and memory, every verdict right.
void check_cases(const costmodel::Calibration* calibration)
{
  for (const MeasuredCase& c : gpt2_cases()) {
    const Prediction p = predict(c.tag, calibration);
    CAPTURE(c.tag);
    CAPTURE(p.step_s);
    CAPTURE(p.memory_bytes / units::kGiB);
    CHECK(p.fits == c.ran);
    if (!c.ran)
      continue;
    CAPTURE(c.step_s);
    CAPTURE(c.memory_bytes / units::kGiB);
    CHECK(std::fabs(p.step_s / c.step_s - 1) <= 0.10);
    CHECK(std::fabs(p.memory_bytes / c.memory_bytes - 1) <= 0.10);
  }
}

costmodel::Calibration calibrated_on_mb1_and_mb4()
{
  const GpuSpec& h100 = *find_catalog_gpu("H100");
  const std::vector<traces::PytorchTrace> measured{
      traces::read_pytorch_trace(kData + "pytorch/kineto-gpt2-medium-mb1.json.gz"),
      traces::read_pytorch_trace(kData + "pytorch/kineto-gpt2-medium-mb4.json.gz")};
  const traces::PytorchFit fit = traces::fit_pytorch_traces(h100, measured, costmodel::kernel_constants(h100));
  costmodel::Calibration calibration;
  calibration.kernels[h100.name] = fit.constants;
  return calibration;
}

} // namespace

TEST_CASE("pytorch fidelity: GPT-2 medium on an H100, uncalibrated: step, memory and verdict of all nine cases")
{
  check_cases(nullptr);
}

TEST_CASE("pytorch fidelity: calibrated on the traces of 1 and 4 sequences, the constants stay physical and the "
          "cases stay within 10%")
{
  const costmodel::Calibration calibration = calibrated_on_mb1_and_mb4();
  const costmodel::KernelConstants& c      = calibration.kernels.at("H100-SXM5-80GB");
  CAPTURE(c.gemm_ceiling);
  CAPTURE(c.unaligned_ceiling);
  CAPTURE(c.attention_ceiling);
  CAPTURE(c.attention_backward_ceiling);
  CAPTURE(c.memory_efficiency);
  CHECK(c.gemm_ceiling > 0.3);
  CHECK(c.gemm_ceiling <= 1);
  CHECK(c.unaligned_ceiling <= c.gemm_ceiling);
  CHECK(c.unaligned_ceiling < 0.25); // cuBLAS' align1 fallback, whatever the family's guess
  CHECK(c.attention_ceiling <= 1);
  CHECK(c.attention_backward_ceiling <= 1);
  CHECK(c.memory_efficiency <= 1);
  // The case it was not fitted to, 16 sequences, and every other one.
  check_cases(&calibration);
}

namespace {

const std::string kH200Data = std::string(HETSIM_SOURCE_DIR) + "/tests/data/h200/";

/// One case of tests/data/h200/pytorch/steps.json as HetSim predicts it on the H200, the memory held to an H100's.
struct H200Case {
  std::string tag, model; ///< model: the config's file name
  bool ran = false;
  double measured_step_s = 0, measured_memory_bytes = 0;
  double step_s = 0, memory_bytes = 0; ///< predicted; the step only for a case that ran
  bool fits = false;
};

std::vector<H200Case> h200_cases(const costmodel::Calibration* calibration)
{
  const e2e::TempDir dir("pytorch_h200");
  const Cluster cluster = load_cluster(kH200Data + "inputs/h200x1.json");
  std::vector<H200Case> cases;
  for (const auto& row : JsonInput::parse_file(kH200Data + "pytorch/steps.json")) {
    H200Case c;
    c.tag   = row.at("tag").get<std::string>();
    c.model = row.at("model").get<std::string>();
    c.ran   = row.at("status").get<std::string>() == "ok";
    const std::string plan_file = dir.file("plan-" + c.tag + ".json", nlohmann::json{{"tp", 1}, {"pp", 1}, {"dp", 1},
                                              {"micro_batch", row.at("micro_batch").get<int>()},
                                              {"global_batch", row.at("micro_batch").get<int>()},
                                              {"zero_stage", 0}, {"recompute", row.at("recompute").get<bool>()},
                                              {"dtype", "bf16"},
                                              {"framework", {{"name", "fsdp"}, {"autocast", true}}}}
                                                                     .dump());
    const models::Workload given = models::load_workload(kData + "inputs/" + c.model);
    const strategies::Plan plan  = strategies::load_plan(plan_file, cluster, given);
    const models::Workload model = strategies::run_by(given, plan.framework, plan.dtype);
    strategies::Problem problem  = strategies::problem_for_plan(cluster, model, plan);
    problem.memory_limit_bytes   = (79.18 + 0.5) * units::kGiB;
    const auto memory            = strategies::plan_memory(plan, problem);
    c.memory_bytes               = memory[0].total_bytes();
    c.fits                       = strategies::largest_overflow(memory) == nullptr;
    if (c.ran) {
      c.measured_step_s       = row.at("step_s").get<double>();
      c.measured_memory_bytes = row.at("peak_reserved_bytes").get<double>() + 0.5 * units::kGiB;
      sim::SimOptions options;
      options.calibration = calibration;
      c.step_s = sim::simulate(plan, problem, strategies::lower(plan, problem), options).report.iteration_time_s;
    }
    cases.push_back(c);
  }
  return cases;
}

/// Mean |predicted / measured - 1| of the step over the cases of `model` that ran.
double mean_step_error(const std::vector<H200Case>& cases, const std::string& model)
{
  double sum = 0;
  int n      = 0;
  for (const H200Case& c : cases)
    if (c.ran && c.model == model) {
      sum += std::fabs(c.step_s / c.measured_step_s - 1);
      ++n;
    }
  return n ? sum / n : 0;
}

} // namespace

TEST_CASE("pytorch fidelity: GPT-2 medium and Llama on an H200 held to an H100's memory, uncalibrated")
{
  // tests/data/h200: 26 cases of GPT-2 medium, Llama-3.2-1B and Llama-3-8B cut to 8 blocks, trained by PyTorch on an
  // H200 whose caching allocator was capped at 79.18 GiB, the CUDA context outside the cap. Every case that ran
  // within 10% on step and memory; the verdict of every case whose predicted memory lies more than 10% from the
  // cap (nearer, the model's own 10% cannot tell: GPT-2 medium at 28 sequences ran in 78.0 GiB where 85.6 are
  // predicted, and Llama-3.2-1B at 16 with checkpointing ran out with 17.4 GiB reserved but unallocated).
  const double cap = (79.18 + 0.5) * units::kGiB;
  int verdicts = 0, ran_cases = 0;
  for (const H200Case& c : h200_cases(nullptr)) {
    CAPTURE(c.tag);
    CAPTURE(c.memory_bytes / units::kGiB);
    if (std::fabs(c.memory_bytes / cap - 1) > 0.10) {
      CHECK(c.fits == c.ran);
      ++verdicts;
    }
    if (!c.ran)
      continue;
    ++ran_cases;
    CAPTURE(c.step_s);
    CAPTURE(c.measured_step_s);
    CAPTURE(c.measured_memory_bytes / units::kGiB);
    CHECK(std::fabs(c.step_s / c.measured_step_s - 1) <= 0.10);
    CHECK(std::fabs(c.memory_bytes / c.measured_memory_bytes - 1) <= 0.10);
  }
  CHECK(ran_cases == 15);
  CHECK(verdicts >= 20); // of 26: five lie within 10% of the cap
}

TEST_CASE("pytorch fidelity: what a trace of one family fits belongs to the GPU: another family is no worse for it")
{
  // Calibrated on the H200 trace of Llama-3.2-1B, GPT-2 medium on the same GPU (eight cases it never saw). The
  // constants are the GPU's and PyTorch's: products, attention, vectorized and unvectorized elementwise passes,
  // each fitted to the kernels of its kind. Before elementwise kernels were told apart by how PyTorch loads them,
  // Llama's slow broadcast and mixed-dtype passes pulled the memory efficiency to 0.71, and the same calibration
  // took GPT-2 medium from 3.9% to 5.1% mean error.
  const GpuSpec& h200 = *find_catalog_gpu("H200");
  const traces::PytorchFit fit = traces::fit_pytorch_traces(
      h200, {traces::read_pytorch_trace(kH200Data + "pytorch/kineto-llama-3.2-1b-mb2.json.gz")},
      costmodel::kernel_constants(h200));
  costmodel::Calibration calibration;
  calibration.kernels[h200.name] = fit.constants;
  const double uncalibrated = mean_step_error(h200_cases(nullptr), "gpt2-medium.json");
  const double calibrated   = mean_step_error(h200_cases(&calibration), "gpt2-medium.json");
  CAPTURE(uncalibrated);
  CAPTURE(calibrated);
  CHECK(calibrated <= uncalibrated + 0.002); // within what rounding the constants moves
  // The unvectorized rate is the multiprocessors': the H100's GPT-2 traces and the H200's Llama trace, two GPUs
  // of one SM count and clock but 3.35 and 4.8 TB/s, and two families, give it within 15% of each other.
  const costmodel::Calibration gpt2 = calibrated_on_mb1_and_mb4();
  const double h100_rate = gpt2.kernels.at("H100-SXM5-80GB").unvectorized_bytes_per_sm_s;
  const double h200_rate = fit.constants.unvectorized_bytes_per_sm_s;
  CAPTURE(h100_rate);
  CAPTURE(h200_rate);
  CHECK(std::fabs(h100_rate / h200_rate - 1) < 0.15);
  CHECK(h200_rate * h200.multiprocessors < 0.6 * h200.memory_bandwidth_bytes_per_s); // far below its memory
}

TEST_CASE("pytorch fidelity: what the traced family's operators leave out is fitted for that family alone")
{
  // `hetsim calibrate` with the traced run's plan, model and cluster: after the GPU's constants, the traced
  // family's memory-bound kernels against the model's (Llama-3.2-1B: 1,989 of 2,603 launches a step are
  // modelled). The traced model and Llama-3-8B, another llama, get better; GPT-2 medium keeps the GPU's part.
  const e2e::TempDir dir("pytorch_family");
  const std::string calibration = dir.file("cal.json");
  const e2e::RunResult fitted   = e2e::run_hetsim(
      "calibrate --trace " + kH200Data + "pytorch/kineto-llama-3.2-1b-mb2.json.gz --plan " + kData +
      "inputs/plan-llama-3.2-1b-mb2.json --model " + kData + "inputs/llama-3.2-1b.json --cluster " + kH200Data +
      "inputs/h200x1.json --out " + calibration);
  CAPTURE(fitted.output);
  REQUIRE(fitted.exit_code == 0);
  CHECK(fitted.output.find("llama: memory-bound kernels") != std::string::npos);
  const costmodel::Calibration loaded = costmodel::load_calibration(calibration);
  REQUIRE(loaded.families.count("llama") == 1);
  const double scale = loaded.families.at("llama").elementwise_scale;
  CAPTURE(scale);
  CHECK(scale > 1); // the model's operators list fewer kernels than PyTorch runs
  CHECK(scale < 1.5);
  const std::vector<H200Case> before = h200_cases(nullptr), after = h200_cases(&loaded);
  for (const char* model : {"llama-3.2-1b.json", "llama-3-8b-8l.json"}) {
    CAPTURE(model);
    CAPTURE(mean_step_error(before, model));
    CAPTURE(mean_step_error(after, model));
    CHECK(mean_step_error(after, model) < mean_step_error(before, model));
  }
  CHECK(mean_step_error(after, "gpt2-medium.json") <= mean_step_error(before, "gpt2-medium.json") + 0.002);
  // A PyTorch trace's family needs the run's scenario.
  const e2e::RunResult unplaced = e2e::run_hetsim("calibrate --trace " + kH200Data +
                                                  "pytorch/kineto-llama-3.2-1b-mb2.json.gz --plan " + kData +
                                                  "inputs/plan-llama-3.2-1b-mb2.json --out " + dir.file("x.json"));
  CHECK(unplaced.exit_code == 2);
  CHECK(e2e::last_line(unplaced.output).find("needs --cluster and --model") != std::string::npos);
}

TEST_CASE("pytorch fidelity: calibrate, validate and simulate from the command line")
{
  const e2e::TempDir dir("pytorch_cli");
  const std::string traces = kData + "pytorch/kineto-gpt2-medium-mb";
  const std::string calibration = dir.file("cal.json");
  const e2e::RunResult fitted =
      e2e::run_hetsim("calibrate --trace " + traces + "1.json.gz --trace " + traces + "4.json.gz --out " + calibration);
  CAPTURE(fitted.output);
  REQUIRE(fitted.exit_code == 0);
  CHECK(fitted.output.find("H100-SXM5-80GB from 2 PyTorch profiler traces") != std::string::npos);
  CHECK(fitted.output.find("host dispatch kept at the family's") != std::string::npos);
  const nlohmann::json written = nlohmann::json::parse(e2e::read_file(calibration));
  CHECK(written["evidence"]["H100-SXM5-80GB"]["tokens"] == nlohmann::json::array({1024.0, 4096.0}));

  const std::string scenario = " --cluster " + kData + "inputs/h100x1.json --model " + kData + "inputs/gpt2-medium.json";
  const e2e::RunResult checked = e2e::run_hetsim("validate --trace " + traces + "16.json.gz --plan " + kData +
                                                 "inputs/plan-gpt2-medium-mb16.json" + scenario);
  CAPTURE(checked.output);
  CHECK(checked.exit_code == 0);
  for (const char* kind : {"matmul", "attention", "loss", "optimizer", "memory"})
    CHECK(checked.output.find(std::string("  ") + kind) != std::string::npos);

  // 16 sequences lie beyond the 1 and 4 the calibration saw: the simulation says so, and by how far.
  const std::string report        = dir.file("report.json");
  const e2e::RunResult simulated = e2e::run_hetsim("simulate --plan " + kData + "inputs/plan-gpt2-medium-mb16.json" +
                                                   scenario + " --calibration " + calibration + " --report " + report);
  CAPTURE(simulated.output);
  CHECK(simulated.exit_code == 0);
  CHECK(simulated.output.find("16384 tokens per micro-batch extrapolates 4.0x beyond the calibrated 1024-4096") !=
        std::string::npos);
  const nlohmann::json reported = nlohmann::json::parse(e2e::read_file(report));
  REQUIRE(reported["calibration_confidence"].size() == 2);
  CHECK(reported["calibration_confidence"][0].get<std::string>().find("matmul 4%") != std::string::npos);

  // A PyTorch trace and one of HetSim's own are two calls.
  const e2e::RunResult mixed = e2e::run_hetsim("calibrate --trace " + traces + "1.json.gz --trace " + calibration +
                                               " --out " + dir.file("other.json"));
  CHECK(mixed.exit_code == 2);
}
