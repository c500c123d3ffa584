/// `hetsim calibrate`: fit compute efficiencies and link α/β to measured traces.

#include "cli/command.hpp"
#include "cli/scenario.hpp"
#include "core/error.hpp"
#include "core/gpu_spec.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "sim/simulate/replay_calibration.hpp"
#include "traces/calibrate.hpp"
#include "traces/kernel_fit.hpp"
#include "traces/pytorch_fit.hpp"
#include "traces/pytorch_trace.hpp"
#include "traces/pytorch_validate.hpp"
#include "sim/simulate/simulate.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

namespace hetsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> traces;
  std::vector<std::string> plans; ///< with cluster and model: refine the links by replaying these runs
  std::string cluster;
  std::vector<std::string> models; ///< one for every run, or one per --trace
  std::vector<std::string> gpus; ///< PyTorch profiler traces: the GPU type of each (or one for all)
  std::string out;
};

/// That the runs behind the traces can be loaded: --cluster, --model once or per --trace, and one --plan per --trace.
void check_run_inputs(const CalibrateOptions& options)
{
  if (options.cluster.empty() || options.models.empty())
    throw InputError("calibrate: --plan needs --cluster and --model (the runs are replayed in the simulator)");
  if (options.plans.size() != options.traces.size())
    throw InputError("calibrate: give one --plan per --trace (got " + std::to_string(options.traces.size()) +
                     " traces and " + std::to_string(options.plans.size()) + " plans)");
  if (options.models.size() != 1 && options.models.size() != options.traces.size())
    throw InputError("calibrate: give one --model for all traces or one per --trace (got " +
                     std::to_string(options.traces.size()) + " traces and " + std::to_string(options.models.size()) +
                     " models)");
}

/// The runs behind the traces: each --plan lowered on --cluster and --model, scaled as its trace was measured.
std::vector<MeasuredRun> load_runs(const CalibrateOptions& options, const std::vector<traces::Trace>& measured)
{
  check_run_inputs(options);
  std::vector<MeasuredRun> loaded;
  for (std::size_t i = 0; i < options.plans.size(); ++i) {
    const std::string& model = options.models[options.models.size() == 1 ? 0 : i];
    loaded.push_back(load_measured_run(options.cluster, model, options.plans[i], measured[i].scale));
    if (loaded.back().schedule.tasks.size() != measured[i].events.size())
      throw InputError("calibrate: " + options.traces[i] + " has " + std::to_string(measured[i].events.size()) +
                       " tasks but the schedule of " + options.plans[i] + " has " +
                       std::to_string(loaded.back().schedule.tasks.size()) + " (was it measured with that plan?)");
  }
  return loaded;
}

/// Replays each calibration run in the simulator and rescales the link classes until it reproduces them.
costmodel::Calibration refine_by_replay(const std::vector<MeasuredRun>& loaded,
                                        const std::vector<traces::Trace>& measured,
                                        const costmodel::Calibration& first_fit)
{
  std::vector<sim::CalibrationRun> runs;
  for (std::size_t i = 0; i < loaded.size(); ++i)
    runs.push_back({&measured[i], &loaded[i].scenario->plan, &loaded[i].schedule, loaded[i].scenario->problem});
  std::vector<sim::ReplayFitRound> rounds;
  const costmodel::Calibration refined =
      sim::fit_links_by_replay(first_fit, loaded.front().scenario->cluster, std::move(runs), 6, 0.005, &rounds);
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    std::printf("replay round %zu: measured/simulated communication", r + 1);
    for (const auto& [link, scale] : rounds[r].scale)
      std::printf(" %s %.3f", link.c_str(), scale);
    std::printf("\n");
  }
  return refined;
}

/// Kernel constants per GPU type from the runs' compute tasks, through their layers' operators.
std::map<std::string, costmodel::KernelConstants> fit_kernels(const std::vector<MeasuredRun>& loaded,
                                                              const std::vector<traces::Trace>& measured,
                                                              std::vector<std::string>& skipped)
{
  std::vector<traces::MeasuredSchedule> runs;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    const Scenario& scenario = *loaded[i].scenario;
    runs.push_back({&measured[i], &loaded[i].schedule, &scenario.workload, &scenario.cluster, scenario.plan.dtype});
  }
  return traces::fit_kernel_constants(runs, &skipped);
}

/// PyTorch profiler traces grouped by GPU type, each read once, and where --trace i landed.
struct ProfiledTraces {
  std::map<std::string, std::vector<traces::PytorchTrace>> by_gpu;
  std::vector<std::pair<std::string, std::size_t>> order; ///< --trace i: its GPU type and index there

  const traces::PytorchTrace& operator[](std::size_t i) const { return by_gpu.at(order[i].first)[order[i].second]; }
};

/// Reads every --trace and names its GPU type: from its deviceProperties, or --gpu.
ProfiledTraces read_profiled_traces(const CalibrateOptions& options)
{
  if (!options.gpus.empty() && options.gpus.size() != 1 && options.gpus.size() != options.traces.size())
    throw InputError("calibrate: give one --gpu for all traces or one per --trace (got " +
                     std::to_string(options.traces.size()) + " traces and " + std::to_string(options.gpus.size()) +
                     " GPUs)");
  ProfiledTraces profiled;
  for (std::size_t i = 0; i < options.traces.size(); ++i) {
    traces::PytorchTrace trace = traces::read_pytorch_trace(options.traces[i]);
    const GpuSpec* gpu = nullptr;
    if (options.gpus.empty()) {
      gpu = find_gpu_by_device_name(trace.device_name);
      if (!gpu)
        throw InputError(options.traces[i] + ": deviceProperties: GPU '" + trace.device_name +
                         "' is not one HetSim knows by name; give its type with --gpu (e.g. --gpu H100)");
    } else {
      const std::string& name = options.gpus[options.gpus.size() == 1 ? 0 : i];
      gpu                     = find_catalog_gpu(name);
      if (!gpu)
        throw InputError("--gpu: unknown GPU '" + name + "'");
    }
    auto& traces = profiled.by_gpu[gpu->name];
    profiled.order.emplace_back(gpu->name, traces.size());
    traces.push_back(std::move(trace));
  }
  return profiled;
}

/// With --plan (and --model, --cluster): each traced model family's memory-bound time against the model's, once
/// the GPU's constants are fitted, as that family's elementwise scale (costmodel::FamilyCalibration). What the
/// GPU's kernels explain stays with the GPU; what the family's operators leave out stays with the family.
void fit_families(const CalibrateOptions& options, const ProfiledTraces& profiled,
                  costmodel::Calibration& calibration)
{
  check_run_inputs(options);
  struct Sums {
    double measured = 0, predicted = 0;
    std::string gpu;
    int traces = 0;
  };
  std::map<std::string, Sums> by_type;
  for (std::size_t i = 0; i < options.traces.size(); ++i) {
    const std::string& model = options.models[options.models.size() == 1 ? 0 : i];
    const MeasuredRun run    = load_measured_run(options.cluster, model, options.plans[i], 1, &calibration);
    const Scenario& scenario = *run.scenario;
    if (!scenario.workload.shape || !scenario.workload.shape->eager)
      throw InputError("calibrate: " + model + ": a family's elementwise work is fitted for a Hugging Face config "
                       "run by eager modules (a plan of framework fsdp or deepspeed)");
    sim::SimOptions sim_options;
    sim_options.calibration = &calibration;
    sim_options.exact       = true;
    const sim::SimResult result = sim::simulate(scenario.plan, scenario.problem, run.schedule, sim_options);
    const auto [measured, predicted] = traces::memory_bound_seconds(traces::compare_pytorch_trace(
        profiled[i], result.trace, run.schedule, scenario.cluster,
        scenario.workload, costmodel::ComputeModel(&calibration), scenario.plan.dtype));
    Sums& sums = by_type[scenario.workload.shape->type_name()];
    sums.measured += measured;
    sums.predicted += predicted;
    sums.gpu = scenario.cluster.gpu_of(0).name;
    ++sums.traces;
  }
  for (const auto& [type, sums] : by_type) {
    if (sums.predicted <= 0 || sums.measured <= 0)
      throw InputError("calibrate: the traces of " + type + " show no memory-bound kernels to fit its family to");
    costmodel::FamilyCalibration& family = calibration.families[type];
    family.elementwise_scale             = std::clamp(sums.measured / sums.predicted, 0.25, 4.0);
    family.fitted_on                     = sums.gpu;
    family.traces                        = sums.traces;
    std::printf("%s: memory-bound kernels %.3g times the model's (%.4g s measured, %.4g s modelled a step, %d "
                "trace%s on %s): what its operators leave out, for this family only\n",
                type.c_str(), family.elementwise_scale, sums.measured, sums.predicted, sums.traces,
                sums.traces == 1 ? "" : "s", sums.gpu.c_str());
  }
}

/// Fits each GPU type's kernel constants to PyTorch profiler traces of it (one step of a framework's
/// training, as torch.profiler records it), starting from the family's.
costmodel::Calibration calibrate_from_pytorch(const ProfiledTraces& profiled)
{
  costmodel::Calibration calibration;
  for (const auto& [name, traces] : profiled.by_gpu) {
    const GpuSpec& gpu            = *find_catalog_gpu(name);
    const traces::PytorchFit fit = traces::fit_pytorch_traces(gpu, traces, costmodel::kernel_constants(gpu));
    calibration.kernels[name]    = fit.constants;
    costmodel::CalibrationEvidence& evidence = calibration.evidence[name];
    evidence.source     = "pytorch profiler";
    evidence.traces     = static_cast<int>(traces.size());
    evidence.min_tokens = fit.min_tokens;
    evidence.max_tokens = fit.max_tokens;
    for (const auto& [kind, spread] : fit.spread)
      evidence.errors[kind] = {spread.kernels, spread.median_error, spread.p90_error};
    std::cout << name << " from " << traces.size() << " PyTorch profiler trace" << (traces.size() == 1 ? "" : "s")
              << ":\n";
    for (const std::string& note : fit.notes)
      std::cout << "  " << note << '\n';
    for (const auto& [kind, spread] : fit.spread)
      std::printf("  %-20s %5d kernels, measured %.4g s, modelled %.4g s, per kernel %.1f%% median, %.1f%% p90\n",
                  kind.c_str(), spread.kernels, spread.measured_s, spread.modelled_s, 100 * spread.median_error,
                  100 * spread.p90_error);
  }
  return calibration;
}

int run_calibrate(const CalibrateOptions& options)
{
  auto inputs = options.traces;
  inputs.insert(inputs.end(), options.plans.begin(), options.plans.end());
  inputs.insert(inputs.end(), options.models.begin(), options.models.end());
  if (!options.cluster.empty())
    inputs.push_back(options.cluster);
  check_output(options.out, inputs, "--out");
  std::size_t profiled = 0;
  for (const auto& file : options.traces)
    profiled += traces::is_pytorch_trace(file) ? 1 : 0;
  if (profiled > 0) {
    if (profiled != options.traces.size())
      throw InputError("calibrate: give PyTorch profiler traces and HetSim's traces in separate calls");
    const ProfiledTraces pytorch_traces = read_profiled_traces(options);
    costmodel::Calibration calibration  = calibrate_from_pytorch(pytorch_traces);
    if (!options.plans.empty())
      fit_families(options, pytorch_traces, calibration);
    write_file_atomically(options.out, costmodel::calibration_to_json(calibration).dump(1) + "\n");
    std::cout << "calibration written to " << options.out << '\n';
    return 0;
  }
  if (!options.gpus.empty())
    throw InputError("calibrate: --gpu names the GPU of PyTorch profiler traces; HetSim's traces name theirs");
  std::vector<traces::Trace> loaded;
  for (const auto& file : options.traces)
    loaded.push_back(traces::read_chrome_trace(file));
  std::vector<std::string> skipped;
  costmodel::Calibration calibration = traces::calibrate(loaded, &skipped);
  for (const auto& line : skipped)
    std::cerr << "warning: " << line << " (left out)\n";
  if (!options.plans.empty()) {
    const std::vector<MeasuredRun> runs = load_runs(options, loaded);
    if (!calibration.links.empty())
      calibration = refine_by_replay(runs, loaded, calibration);
    std::vector<std::string> unfitted;
    calibration.kernels = fit_kernels(runs, loaded, unfitted);
    for (const auto& line : unfitted)
      std::cerr << "warning: " << line << " (left out)\n";
  }
  for (const auto& [gpu, points] : calibration.efficiency_points) {
    std::cout << "compute " << gpu << ":";
    for (const auto& [tokens, efficiency] : points)
      std::printf(" %g tokens %.3g%%;", tokens, 100 * efficiency);
    std::cout << '\n';
  }
  for (const auto& [gpu, c] : calibration.kernels)
    std::printf("kernels %s: matrix-product ceiling %.3g, depth overhead %.3g, memory efficiency %.3g, launch gap "
                "%.3g us, host dispatch %.3g us\n",
                gpu.c_str(), c.gemm_ceiling, c.k_overhead, c.memory_efficiency, 1e6 * c.launch_gap_s,
                1e6 * c.host_dispatch_s);
  for (const auto& [name, link] : calibration.links)
    std::printf("link %s: alpha %.4g s, beta %.4g s/byte (%.4g Gbit/s), collective overhead %.4g s\n", name.c_str(),
                link.alpha_s, link.beta_seconds_per_byte, 8e-9 / link.beta_seconds_per_byte,
                link.collective_overhead_s);
  write_file_atomically(options.out, costmodel::calibration_to_json(calibration).dump(1) + "\n");
  std::cout << "calibration written to " << options.out << '\n';
  return 0;
}

} // namespace

CommandRunner add_calibrate_command(CLI::App& app)
{
  auto options      = std::make_shared<CalibrateOptions>();
  CLI::App* command = app.add_subcommand(
      "calibrate", "Fit the cost model to traces measured by `hetsim run`: per GPU type, compute efficiency by "
                   "micro-batch tokens (and, with --plan, the kernel constants of its layers' operators: "
                   "matrix-product ceiling, depth overhead, memory efficiency, launch gap, host dispatch); per link "
                   "class (intra_node, inter_node, inter_region), latency alpha, "
                   "seconds per byte beta and a per-collective overhead by least squares (refined by replaying the "
                   "runs when --plan is given). Use the result with --calibration.");
  command->add_option("--trace", options->traces,
                      "measured trace: trace.json of `hetsim run`, or a PyTorch profiler trace (torch.profiler's "
                      "export_chrome_trace, record_shapes=True, plain or .gz; see docs/running.md); repeat for several")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--plan", options->plans,
                      "the plan each trace measured (repeat, in --trace order): the runs are replayed in the "
                      "simulator and each link class rescaled until the replay matches, so that links the "
                      "calibration runs shared are not mistaken for slow ones; with PyTorch profiler traces, the "
                      "traced model family's memory-bound kernels are fitted against the model's, for that family "
                      "only");
  command->add_option("--cluster", options->cluster, "cluster JSON file, or preset:NAME (with --plan)");
  command->add_option("--model", options->models,
                      "model JSON file, or preset:NAME (with --plan): once for every run, or repeated in --trace "
                      "order");
  command->add_option("--gpu", options->gpus,
                      "the GPU type of each PyTorch profiler trace (once for all, or in --trace order); default: "
                      "the trace's own device name");
  command->add_option("--out", options->out, "calibration JSON to write")->required();
  return [options] { return run_calibrate(*options); };
}

} // namespace hetsim::cli
