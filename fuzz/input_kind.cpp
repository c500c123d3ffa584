#include "fuzz/input_kind.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/gpu_spec.hpp"
#include "core/input_file.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "costmodel/kernel_time.hpp"
#include "costmodel/layer_profile.hpp"
#include "jobs/jobs_file.hpp"
#include "launch/plan_export.hpp"
#include "models/workload.hpp"
#include "reliability/checkpoint.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/profiling/device_profiles.hpp"
#include "sweep/sweep_spec.hpp"
#include "traces/calibrate.hpp"
#include "traces/pytorch_fit.hpp"
#include "traces/pytorch_trace.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>

namespace hetsim::fuzz {
namespace {

namespace fs = std::filesystem;

constexpr std::array kKinds = {InputKind::cluster,        InputKind::model,       InputKind::plan,
                               InputKind::sweep,          InputKind::calibration, InputKind::layer_profile,
                               InputKind::device_profile, InputKind::trace,       InputKind::export_plan,
                               InputKind::pytorch_trace,  InputKind::failures,    InputKind::slowdowns,
                               InputKind::jobs,           InputKind::command_line};
constexpr std::array<std::string_view, kKinds.size()> kNames = {
    "cluster", "model", "plan", "sweep", "calibration", "layer_profile", "device_profile", "trace", "export",
    "pytorch_trace", "failures", "slowdowns", "jobs", "command_line"};

/// The small cluster and models the plan and profile kinds are read against (the executors' test inputs).
fs::path fixed(const InputContext& context, const char* name) { return context.root / "tests/exec/data" / name; }

/// Whether the text of `file` holds `what` (false for a file that cannot be read: its loader says why).
bool mentions(const std::string& file, std::string_view what)
{
  try {
    return read_input_file(file).find(what) != std::string::npos;
  } catch (const InputError&) {
    return false;
  }
}

/// A plan every device can run: data parallel over the whole cluster, one micro-batch of one sequence.
strategies::Plan data_parallel_plan(const Cluster& cluster)
{
  strategies::Plan plan;
  plan.dp = cluster.device_count();
  plan.placement.resize(cluster.device_count());
  std::iota(plan.placement.begin(), plan.placement.end(), 0);
  plan.stage_starts = {0};
  plan.micro_batch.assign(plan.dp, 1);
  plan.grad_accum.assign(plan.dp, 1);
  return plan;
}

strategies::Problem problem_of(const Cluster& cluster, const models::Workload& workload)
{
  strategies::Problem problem;
  problem.cluster  = &cluster;
  problem.workload = &workload;
  return problem;
}

/// Lowers and estimates `plan` and checks its memory, as `simulate` and `search` do before simulating.
void plan_work(const strategies::Plan& plan, const strategies::Problem& problem, const costmodel::ComputeModel& compute,
               const std::string& origin)
{
  (void)strategies::plan_memory(plan, problem);
  (void)strategies::lower_for_replay(plan, problem, false, origin); // folded, as simulate lowers by default
  (void)strategies::estimate(plan, problem, compute);
}

} // namespace

std::span<const InputKind> all_input_kinds() { return kKinds; }

std::optional<std::string> message_violation(const std::string& what, const std::string& file, bool must_name_file)
{
  if (what.find('\n') != std::string::npos || what.find('\r') != std::string::npos)
    return "a message of more than one line: " + quote(what, 300);
  if (must_name_file && what.find(file) == std::string::npos)
    return "a message that does not name the file: " + quote(what, 300);
  return std::nullopt;
}

std::string_view input_kind_name(InputKind kind) { return kNames[static_cast<std::size_t>(kind)]; }

InputKind parse_input_kind(std::string_view name)
{
  for (std::size_t i = 0; i < kKinds.size(); ++i)
    if (kNames[i] == name)
      return kKinds[i];
  std::string names;
  for (std::string_view known : kNames)
    names += (names.empty() ? "" : ", ") + std::string(known);
  throw InputError("--kind: expected one of " + names + ", got " + quote(name));
}

std::vector<fs::path> seed_files(const InputContext& context, InputKind kind)
{
  const fs::path& r = context.root;
  switch (kind) {
    case InputKind::cluster:
      return {fixed(context, "cluster4.json"), fixed(context, "two_types.json"),
              r / "presets/cluster/case5_worldwide_geo.json", r / "experiments/hethub_mixed/a100_h100.json",
              r / "tests/exec/netns/cluster.json"};
    case InputKind::model: // dense, mixture of experts, multi-latent attention, sliding windows, encoders
      return {fixed(context, "model4.json"), fixed(context, "tiny_gpt2.json"), fixed(context, "tiny_mixtral.json"),
              r / "presets/model/gpt2-medium.json", r / "presets/model/llama-2-7b.json",
              r / "presets/model/bert-base-uncased.json", r / "tests/models/data/hf/deepseek-v3.json",
              r / "tests/models/data/hf/qwen2-moe-57b-a14b.json", r / "tests/models/data/hf/gemma-2-9b.json"};
    case InputKind::plan: // data, pipeline (1F1B, interleaved, zero bubble), ZeRO-3, expert and context parallel
      return {fixed(context, "dp4.json"), fixed(context, "pp4.json"), fixed(context, "pp2dp2z3.json"),
              fixed(context, "pp4_zero_bubble.json"), fixed(context, "dp4ep2.json"), fixed(context, "cp2dp2.json"),
              fixed(context, "pp2dp2v2.json"), r / "tests/exec/netns/pp2dp2_wan_dp.json"};
    case InputKind::sweep:
      return {r / "experiments/geo_decentralized/sweep.json"};
    default:
      break;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(r / "fuzz/seeds" / input_kind_name(kind)))
    if (entry.path().extension() == ".json") // not the notes on where a seed came from
      files.push_back(entry.path());
  std::sort(files.begin(), files.end()); // directory order is not deterministic
  if (kind == InputKind::slowdowns)
    files.push_back(r / "docs/examples/slowdowns.json");
  if (kind == InputKind::failures)
    files.push_back(r / "experiments/goodput/geo_illustrative.json");
  if (kind == InputKind::export_plan) // beside the framework objects of the seeds: the run tests' plans
    for (const char* plan : {"pp4_tiny_gpt2.json", "dp4ep2.json", "cp2dp2.json", "pp4_zero_bubble.json"})
      files.push_back(fixed(context, plan));
  return files;
}

std::vector<fs::path> regression_files(const InputContext& context, InputKind kind)
{
  std::vector<fs::path> files;
  const fs::path dir = context.root / "fuzz/regressions" / input_kind_name(kind);
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

void use_input(const InputContext& context, InputKind kind, const std::string& file)
{
  const Cluster cluster4          = load_cluster(fixed(context, "cluster4.json").string());
  const models::Workload model4   = models::load_workload(fixed(context, "model4.json").string());
  const costmodel::ComputeModel plain;
  switch (kind) {
    case InputKind::cluster: {
      const Cluster cluster = load_cluster(file);
      // The replay builds the SimGrid platform: every route of the file becomes links.
      if (cluster.device_count() <= 64) {
        const strategies::Plan plan = data_parallel_plan(cluster);
        const strategies::Problem problem = problem_of(cluster, model4);
        const strategies::Schedule schedule = strategies::lower_for_replay(plan, problem, false); // folded
        sim::SimOptions options;
        options.trace = false;
        options.links = true;
        (void)sim::simulate(plan, problem, schedule, options);
      }
      return;
    }
    case InputKind::model: {
      const models::Workload workload = models::load_workload(file);
      const strategies::Plan plan     = data_parallel_plan(cluster4);
      plan_work(plan, problem_of(cluster4, workload), plain, file);
      return;
    }
    case InputKind::plan: {
      // A plan that names expert parallelism is read against a model with routed experts.
      const models::Workload model = mentions(file, "\"ep\"")
                                         ? models::load_workload(fixed(context, "tiny_mixtral.json").string())
                                         : model4;
      const strategies::Plan plan = strategies::load_plan(file, cluster4, model);
      plan_work(plan, problem_of(cluster4, model), plain, file);
      return;
    }
    case InputKind::sweep:
      (void)sweep::sweep_cells(sweep::load_sweep_spec(file));
      return;
    case InputKind::calibration: {
      const costmodel::Calibration calibration = costmodel::load_calibration(file);
      const costmodel::ComputeModel calibrated(&calibration);
      plan_work(data_parallel_plan(cluster4), problem_of(cluster4, model4), calibrated, "plan");
      return;
    }
    case InputKind::layer_profile: {
      const costmodel::LayerProfile profile = costmodel::load_layer_profile(file, model4, cluster4);
      const costmodel::ComputeModel profiled(nullptr, &profile);
      plan_work(data_parallel_plan(cluster4), problem_of(cluster4, model4), profiled, "plan");
      return;
    }
    case InputKind::device_profile: {
      const models::Workload profiled_model = models::load_workload(fixed(context, "profile_model.json").string());
      (void)strategies::load_device_profiles(file, profiled_model, cluster4);
      return;
    }
    case InputKind::export_plan: {
      // A plan for a transformer of blocks (a routed one when it names expert parallelism), in every format.
      const models::Workload model = models::load_workload(
          fixed(context, mentions(file, "\"ep\"") ? "tiny_mixtral.json" : "tiny_gpt2.json").string());
      const strategies::Plan plan = strategies::load_plan(file, cluster4, model);
      const launch::ExportInputs inputs{&cluster4, &model, &plan, file, "model.json", "cluster4.json"};
      // Each framework refuses the plans simulated as another moves bytes: the input is refused when every
      // format refuses it, and any refusal that breaks the contract goes to the harness at once.
      std::optional<InputError> refusal;
      int written = 0;
      for (auto format : {launch::ExportFormat::megatron, launch::ExportFormat::deepspeed,
                          launch::ExportFormat::torchrun, launch::ExportFormat::slurm}) {
        try {
          (void)launch::export_plan(inputs, format);
          ++written;
        } catch (const InputError& e) {
          if (message_violation(e.what(), file, true))
            throw;
          if (!refusal)
            refusal = e;
        }
      }
      if (written == 0)
        throw *refusal;
      return;
    }
    case InputKind::pytorch_trace: {
      // As `hetsim calibrate --trace` reads it: the kernels of its steps fitted to the GPU it names.
      const traces::PytorchTrace trace = traces::read_pytorch_trace(file);
      const GpuSpec* gpu               = find_gpu_by_device_name(trace.device_name);
      if (!gpu)
        gpu = find_catalog_gpu("H100");
      (void)traces::fit_pytorch_traces(*gpu, {trace}, costmodel::kernel_constants(*gpu));
      return;
    }
    case InputKind::failures: {
      // As simulate --failures uses it: the checkpoint of a sharded data-parallel plan, and its best interval.
      const reliability::FailureModel failures = reliability::load_failure_model(file, cluster4);
      strategies::Plan plan = data_parallel_plan(cluster4);
      plan.zero_stage       = 1;
      const auto problem    = problem_of(cluster4, model4);
      const auto costs      = reliability::checkpoint_costs(failures, plan, problem);
      const auto goodput    = reliability::best_goodput(1.0, 1e4, costs, failures.run_s);
      if (!std::isfinite(goodput.useful_fraction) || !std::isfinite(goodput.interval_s))
        throw InternalError("goodput: a non-finite figure from " + file);
      return;
    }
    case InputKind::slowdowns: {
      // As simulate --slowdowns uses it: profiles on the platform of a data-parallel replay, not folded.
      const std::vector<sim::Slowdown> slowdowns = sim::load_slowdowns(file, cluster4);
      const strategies::Plan plan = data_parallel_plan(cluster4);
      const auto problem          = problem_of(cluster4, model4);
      sim::SimOptions options;
      options.trace     = false;
      options.slowdowns = &slowdowns;
      (void)sim::simulate(plan, problem, strategies::lower(plan, problem), options);
      return;
    }
    case InputKind::jobs: {
      // As simulate --jobs reads it, on the four one-device nodes of cluster4. A planner's search grows with the
      // global batch: the harness leaves batches above 64 unsearched, so that an input costs milliseconds.
      const nlohmann::json text = nlohmann::json::parse(read_input_file(file), nullptr, false);
      if (text.is_object() && text.contains("jobs") && text["jobs"].is_array())
        for (const auto& job : text["jobs"])
          if (job.is_object() && job.contains("global_batch") && job["global_batch"].is_number() &&
              job["global_batch"].get<double>() > 64)
            return;
      const auto jobs = jobs::load_jobs(file, cluster4);
      sim::SimOptions options;
      options.trace = false;
      (void)sim::simulate_shared(cluster4, jobs::shared_jobs(jobs), options);
      return;
    }
    case InputKind::command_line:
      throw InternalError("fuzz: command lines run as processes (command_line.hpp), not as an input file");
    case InputKind::trace: {
      const traces::Trace trace = traces::read_chrome_trace(file);
      try {
        (void)traces::calibrate({trace});
      } catch (const InputError&) {
        // Nothing to fit is the calibration's own refusal of a valid trace; the file was read.
      }
      return;
    }
  }
}

} // namespace hetsim::fuzz
