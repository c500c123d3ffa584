/// `hetsim validate`: replay the Schedule of each measured plan in the simulator and report the errors.

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "cli/scenario.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "sim/simulate/simulate.hpp"
#include "traces/kernel_events.hpp"
#include "traces/pytorch_trace.hpp"
#include "traces/pytorch_validate.hpp"
#include "traces/validate.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace hetsim::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> traces;
  std::vector<std::string> plans;
  std::string cluster;
  std::string model;
  std::string calibration_file;
  std::string report_file;
  double max_error    = 0; ///< 0: no check
  double min_spearman = -2; ///< below -1: no check
};

/// One PyTorch profiler trace against the simulation of its plan: the step, then each kind of kernel.
nlohmann::json validate_pytorch_trace(const std::string& file, const std::string& plan,
                                      const ValidateOptions& options, const costmodel::Calibration* calibration,
                                      double& measured, double& predicted)
{
  const traces::PytorchTrace trace = traces::read_pytorch_trace(file);
  const MeasuredRun run            = load_measured_run(options.cluster, options.model, plan, 1, calibration);
  const Scenario& scenario         = *run.scenario;
  sim::SimOptions sim_options;
  sim_options.calibration    = calibration;
  sim_options.exact          = true; // compared task by task, on the schedule the run measured
  const sim::SimResult result = sim::simulate(scenario.plan, scenario.problem, run.schedule, sim_options);
  const traces::PytorchComparison c = traces::compare_pytorch_trace(
      trace, result.trace, run.schedule, scenario.cluster, scenario.workload,
      costmodel::ComputeModel(calibration), scenario.plan.dtype);
  measured  = c.measured_step_s;
  predicted = c.predicted_step_s;
  std::printf("%-28s %12.4g %12.4g %+7.1f%%  (PyTorch profiler trace: GPU busy %.4g s, %.0f launches measured, "
              "%.0f modelled)\n",
              plan.c_str(), c.measured_step_s, c.predicted_step_s, 100 * (c.predicted_step_s / c.measured_step_s - 1),
              c.measured_busy_s, c.measured_launches, c.predicted_launches);
  nlohmann::json by_kind = nlohmann::json::object();
  for (const auto& [kind, k] : c.by_kind) {
    std::printf("  %-26s %12.4g %12.4g %+7.1f%%  (GPU time per step)\n", kind.c_str(), k.measured_s, k.predicted_s,
                k.measured_s > 0 ? 100 * (k.predicted_s / k.measured_s - 1) : 0.0);
    by_kind[kind] = {{"measured_s", k.measured_s}, {"predicted_s", k.predicted_s}};
  }
  return {{"plan", plan},
          {"trace", file},
          {"measured_iteration_s", c.measured_step_s},
          {"measured_gpu_busy_s", c.measured_busy_s},
          {"predicted_iteration_s", c.predicted_step_s},
          {"iteration_error", c.predicted_step_s / c.measured_step_s - 1},
          {"kernel_kinds", by_kind}};
}

int run_validate(const ValidateOptions& options)
{
  if (options.traces.size() != options.plans.size())
    throw InputError("validate: give one --plan per --trace (got " + std::to_string(options.traces.size()) +
                     " traces and " + std::to_string(options.plans.size()) + " plans)");
  std::optional<costmodel::Calibration> calibration;
  if (!options.calibration_file.empty())
    calibration = costmodel::load_calibration(options.calibration_file);

  std::vector<double> measured, predicted;
  nlohmann::json plans = nlohmann::json::array();
  std::printf("%-28s %12s %12s %8s  per-kind median |task error|\n", "plan", "measured s", "predicted s", "error");
  for (std::size_t i = 0; i < options.traces.size(); ++i) {
    if (traces::is_pytorch_trace(options.traces[i])) {
      double step = 0, simulated = 0;
      plans.push_back(validate_pytorch_trace(options.traces[i], options.plans[i], options,
                                             calibration ? &*calibration : nullptr, step, simulated));
      measured.push_back(step);
      predicted.push_back(simulated);
      continue;
    }
    const traces::Trace trace = traces::read_chrome_trace(options.traces[i]);
    const MeasuredRun run     = load_measured_run(options.cluster, options.model, options.plans[i], trace.scale,
                                                  calibration ? &*calibration : nullptr);
    const Scenario& scenario             = *run.scenario;
    const strategies::Schedule& schedule = run.schedule;
    sim::SimOptions sim_options;
    sim_options.calibration = calibration ? &*calibration : nullptr;
    sim_options.exact       = true; // compared task by task, on the schedule the run measured
    sim::SimResult result = sim::simulate(scenario.plan, scenario.problem, schedule, sim_options);
    if (!trace.kernels.empty()) // measured with --trace-kernels: compare kernel by kernel too
      result.trace.kernels = traces::predicted_kernel_events(
          result.trace, schedule, scenario.cluster, scenario.workload,
          costmodel::ComputeModel(sim_options.calibration), scenario.plan.dtype, trace.scale);
    const traces::Comparison c = traces::compare_traces(trace, result.trace);
    measured.push_back(c.measured_iteration_s);
    predicted.push_back(c.predicted_iteration_s);
    std::string kinds;
    nlohmann::json by_kind = nlohmann::json::object();
    for (const auto& [kind, k] : c.by_kind) {
      char text[64];
      std::snprintf(text, sizeof text, " %s %.1f%%", kind.c_str(), 100 * k.median_abs_error);
      kinds += text;
      by_kind[kind] = {{"tasks", k.tasks}, {"median_abs_error", k.median_abs_error},
                       {"measured_s", k.measured_s}, {"predicted_s", k.predicted_s}};
    }
    std::printf("%-28s %12.4g %12.4g %+7.1f%% %s\n", options.plans[i].c_str(), c.measured_iteration_s,
                c.predicted_iteration_s, 100 * c.iteration_error, kinds.c_str());
    nlohmann::json by_kernel = nlohmann::json::object();
    for (const auto& [name, k] : c.by_kernel) {
      std::printf("  kernel %-26s %12.4g %12.4g %+7.1f%%  (%d launches)\n", name.c_str(), k.measured_s, k.predicted_s,
                  100 * k.error, k.kernels);
      by_kernel[name] = {{"launches", k.kernels}, {"measured_s", k.measured_s}, {"predicted_s", k.predicted_s},
                         {"error", k.error}};
    }
    plans.push_back({{"plan", options.plans[i]},
                     {"trace", options.traces[i]},
                     {"scale", trace.scale},
                     {"measured_iteration_s", c.measured_iteration_s},
                     {"predicted_iteration_s", c.predicted_iteration_s},
                     {"iteration_error", c.iteration_error},
                     {"tasks", by_kind}});
    if (!c.by_kernel.empty())
      plans.back()["kernels"] = by_kernel;
  }
  nlohmann::json report = {{"plans", plans}};
  if (measured.size() >= 2) {
    const double rho  = traces::spearman(measured, predicted);
    report["spearman"] = rho;
    std::printf("Spearman rank correlation of predicted vs measured iteration time over %zu plans: %.3f\n",
                measured.size(), rho);
  }
  int failed = 0;
  if (options.max_error > 0)
    for (std::size_t i = 0; i < measured.size(); ++i) {
      const double error = std::abs(predicted[i] - measured[i]) / measured[i];
      if (!(error <= options.max_error)) { // an error that is not a number fails the gate too
        std::fprintf(stderr, "validate: %s: iteration-time error %.1f%% exceeds --max-error %.1f%%\n",
                     options.plans[i].c_str(), 100 * error, 100 * options.max_error);
        ++failed;
      }
    }
  const bool spearman_gate = options.min_spearman > -1; // given: the option refuses -1 and below
  if (spearman_gate && report.contains("spearman") && !(report["spearman"].get<double>() >= options.min_spearman)) {
    std::fprintf(stderr, "validate: Spearman %.3f is below --min-spearman %.3f\n", report["spearman"].get<double>(),
                 options.min_spearman);
    ++failed;
  }
  if (!options.report_file.empty()) {
    auto inputs = options.traces;
    inputs.insert(inputs.end(), options.plans.begin(), options.plans.end());
    for (const std::string& file : {options.cluster, options.model, options.calibration_file})
      if (!file.empty())
        inputs.push_back(file);
    check_output(options.report_file, inputs, "--report");
    write_file_atomically(options.report_file, report.dump(1) + "\n");
  }
  return failed ? 1 : 0;
}

} // namespace

CommandRunner add_validate_command(CLI::App& app)
{
  auto options      = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate", "Replay the Schedule of each measured plan in the simulator and report the iteration-time error, "
                  "the median task-duration error per task kind, and over several plans the Spearman rank "
                  "correlation of predicted vs measured iteration time.");
  command->add_option("--trace", options->traces,
                      "measured trace: HetSim's (`hetsim run`) or a PyTorch profiler trace of one training step or "
                      "more (plain or .gz); repeat, one per --plan")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--plan", options->plans, "the plan the trace measured; repeat, in --trace order")->required();
  command->add_option("--cluster", options->cluster, "cluster JSON file, or preset:NAME")->required();
  command->add_option("--model", options->model, "model JSON file, or preset:NAME")->required();
  command->add_option("--calibration", options->calibration_file, "calibration JSON for the simulation");
  command->add_option("--report", options->report_file, "write the comparison as JSON to this file");
  command->add_option("--max-error", options->max_error,
                      "exit 1 when a plan's relative iteration-time error exceeds this (e.g. 0.15; at most 10)")
      ->check(finite_in(0, 10, true));
  // -1 would let every correlation pass: a gate that gates nothing is refused.
  command->add_option("--min-spearman", options->min_spearman,
                      "exit 1 when the Spearman correlation is below this (above -1, at most 1)")
      ->check(finite_in(-1, 1, true));
  return [options] { return run_validate(*options); };
}

} // namespace hetsim::cli
