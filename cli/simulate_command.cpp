/// `hetsim simulate`: lower a plan and replay one training iteration in the SimGrid simulator.

#include "cli/command.hpp"
#include "cli/goodput.hpp"
#include "cli/progress.hpp"
#include "cli/scenario.hpp"
#include "cli/shared_jobs.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "sim/report/report.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/band.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "traces/kernel_events.hpp"
#include "traces/trace.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace hetsim::cli {
namespace {

struct SimulateOptions {
  ScenarioOptions scenario;
  std::string report_file;
  std::string trace_file;
  std::string calibration_file;
  std::string profile_file;
  std::string trace_devices;
  std::string failures_file;
  std::string slowdowns_file;
  std::string jobs_file;
  bool allow_oom           = false;
  bool analytic_intra_node = false;
  bool pipelined_rings     = false;
  bool trace_kernels       = false;
  bool exact               = false;
};

/// What the slowdowns of a what-if file cost the iteration: all of them against none, and each alone.
struct SlowdownEffects {
  double without_s = 0;
  std::vector<std::pair<std::string, double>> alone_s; ///< label, iteration with only it (up to kAlone of them)
};
constexpr std::size_t kAloneReplays = 8; // each is a full replay

SlowdownEffects slowdown_effects(const std::vector<sim::Slowdown>& slowdowns, const strategies::Plan& plan,
                                 const strategies::Problem& problem, const strategies::Schedule& schedule,
                                 sim::SimOptions options)
{
  options.trace = false;
  options.links = false;
  options.progress = nullptr;
  SlowdownEffects effects;
  effects.without_s = sim::simulate(plan, problem, schedule, options).report.iteration_time_s;
  if (slowdowns.size() > 1 && slowdowns.size() <= kAloneReplays)
    for (const sim::Slowdown& s : slowdowns) {
      const std::vector<sim::Slowdown> one{s};
      options.slowdowns = &one;
      effects.alone_s.emplace_back(s.label, sim::simulate(plan, problem, schedule, options).report.iteration_time_s);
    }
  return effects;
}

void print_slowdown_effects(const SlowdownEffects& effects, double with_s, const std::string& file)
{
  std::printf("slowdowns (%s): iteration %.4g s against %.4g s without them (%+.4g s, %+.1f%%)\n", file.c_str(),
              with_s, effects.without_s, with_s - effects.without_s, 100 * (with_s / effects.without_s - 1));
  for (const auto& [label, seconds] : effects.alone_s)
    std::printf("  %s alone: %+.4g s\n", label.c_str(), seconds - effects.without_s);
}

nlohmann::json slowdown_effects_json(const SlowdownEffects& effects, double with_s)
{
  nlohmann::json json = {{"iteration_time_s", with_s}, {"without_s", effects.without_s}};
  for (const auto& [label, seconds] : effects.alone_s)
    json["alone"].push_back({{"slowdown", label}, {"iteration_time_s", seconds}});
  return json;
}

/// `--jobs`: the jobs file names each job's model and plan, and replays take no trace yet.
int run_jobs(const SimulateOptions& options)
{
  const std::pair<bool, const char*> alone_only[] = {
      {!options.scenario.model.empty(), "--model"},      {!options.scenario.plan.empty(), "--plan"},
      {!options.trace_file.empty(), "--trace"},          {!options.profile_file.empty(), "--profile"},
      {!options.failures_file.empty(), "--failures"},    {options.exact, "--exact"},
      {options.scenario.seq_len != 0, "--seq-len"},      {!options.scenario.memory_limit.empty(), "--memory-limit"},
      {!options.scenario.workspace.empty(), "--workspace"}};
  for (const auto& [given, option] : alone_only)
    if (given)
      throw InputError(std::string("--jobs: ") + option +
                       " is for one job (the jobs file names each job's model, plan and sequence length; "
                       "jobs replay unfolded and write no trace)");
  SharedJobsOptions shared;
  shared.cluster             = options.scenario.cluster;
  shared.jobs_file           = options.jobs_file;
  shared.report_file         = options.report_file;
  shared.calibration_file    = options.calibration_file;
  shared.slowdowns_file      = options.slowdowns_file;
  shared.allow_oom           = options.allow_oom;
  shared.analytic_intra_node = options.analytic_intra_node;
  shared.pipelined_rings     = options.pipelined_rings;
  return run_shared_jobs(shared);
}

int run_simulate(SimulateOptions& options)
{
  if (!options.jobs_file.empty())
    return run_jobs(options);
  resolve_defaults(options.scenario);
  auto inputs = options.scenario.inputs();
  for (const std::string* file : {&options.calibration_file, &options.profile_file, &options.failures_file,
                                   &options.slowdowns_file})
    if (!file->empty())
      inputs.push_back(*file);
  if (!options.report_file.empty())
    check_output(options.report_file, inputs, "--report");
  if (!options.trace_file.empty())
    check_output(options.trace_file, inputs, "--trace");
  check_distinct_outputs({{"--report", options.report_file}, {"--trace", options.trace_file}});
  if (options.trace_kernels && options.trace_file.empty())
    throw InputError("--trace-kernels: expected --trace FILE to write the kernels to");
  if (!options.trace_devices.empty() && options.trace_file.empty())
    throw InputError("--trace-devices: expected --trace FILE to write the devices' events to");

  auto scenario = std::make_unique<Scenario>();
  load_scenario(options.scenario, *scenario);
  std::optional<costmodel::Calibration> calibration;
  if (!options.calibration_file.empty())
    calibration = costmodel::load_calibration(options.calibration_file);
  std::optional<costmodel::LayerProfile> profile;
  if (!options.profile_file.empty())
    profile = costmodel::load_layer_profile(options.profile_file, scenario->workload, scenario->cluster);
  print_attention_notes(scenario->workload, scenario->cluster);
  std::vector<std::string> calibrated_gpus;
  if (calibration) {
    calibrated_gpus = report_calibration_match(*calibration, options.calibration_file, scenario->cluster);
    apply_link_calibration(*scenario, *calibration);
  }
  std::vector<sim::Slowdown> slowdowns;
  if (!options.slowdowns_file.empty())
    slowdowns = sim::load_slowdowns(options.slowdowns_file, scenario->cluster);
  std::optional<reliability::FailureModel> failures;
  if (!options.failures_file.empty())
    failures = reliability::load_failure_model(options.failures_file, scenario->cluster);

  const auto& plan    = scenario->plan;
  const auto& problem = scenario->problem;
  const bool representatives_only = options.trace_devices == "representatives";
  const std::vector<int> trace_devices =
      options.trace_devices.empty() || representatives_only
          ? std::vector<int>{}
          : traces::parse_device_list(options.trace_devices, scenario->cluster.device_count(), "--trace-devices");
  std::cout << "scenario: " << scenario->workload.name << " on " << scenario->cluster.name() << " ("
            << scenario->cluster.device_count() << " devices), tp " << plan.tp
            << (plan.cp > 1 ? " x cp " + std::to_string(plan.cp) : "") << " x pp " << plan.pp << " x dp "
            << plan.replicas() << (plan.ep > 1 ? " (ep " + std::to_string(plan.ep) + ")" : "") << ", "
            << (plan.virtual_stages > 1 ? "interleaved " : "")
            << strategies::schedule_name(plan.schedule)
            << (plan.virtual_stages > 1 ? " (" + std::to_string(plan.virtual_stages) + " chunks per stage)" : "")
            << ", ZeRO-" << plan.zero_stage
            << ", global batch " << plan.global_batch() << '\n';

  const auto memory = strategies::plan_memory(plan, problem);
  try {
    strategies::check_memory(memory);
  } catch (const InfeasiblePlan& e) {
    if (!options.allow_oom)
      throw;
    std::cerr << "warning: " << e.what() << " (simulating anyway: --allow-oom)\n";
  }

  // A slowed device stands for no other: the replay is not folded.
  const strategies::Schedule schedule =
      strategies::lower_for_replay(plan, problem, options.exact || !slowdowns.empty(), options.scenario.plan);
  if (schedule.fold)
    std::cout << "folded: " << schedule.fold->summary()
              << " standing for identical ones (--exact replays every device)\n";
  sim::SimOptions sim_options;
  sim_options.analytic_intra_node = options.analytic_intra_node;
  sim_options.pipelined_rings     = options.pipelined_rings;
  sim_options.calibration         = calibration ? &*calibration : nullptr;
  sim_options.profile             = profile ? &*profile : nullptr;
  sim_options.trace               = !options.trace_file.empty();
  if (representatives_only) {
    for (int d = 0; d < scenario->cluster.device_count(); ++d)
      if (schedule.representative(d) == d)
        sim_options.trace_devices.push_back(d);
  } else {
    sim_options.trace_devices = trace_devices;
  }
  sim_options.links               = true;
  sim_options.exact               = options.exact || !slowdowns.empty();
  sim_options.progress            = replay_progress();
  std::optional<SlowdownEffects> effects;
  if (!slowdowns.empty())
    effects = slowdown_effects(slowdowns, plan, problem, schedule, sim_options);
  sim_options.slowdowns           = slowdowns.empty() ? nullptr : &slowdowns;
  sim::SimResult result           = sim::simulate(plan, problem, schedule, sim_options);
  if (const auto& repeated = result.repeated) {
    if (repeated->period_s > 0)
      std::printf("repeated: replayed %d of %d micro-batches per replica, whose steady state repeats every %.4g s "
                  "(--exact replays them all)\n",
                  repeated->replayed, repeated->micro_batches, repeated->period_s);
    else
      std::printf("repeated: no steady state in a replay of %d of %d micro-batches; replayed them all\n",
                  repeated->replayed, repeated->micro_batches);
  }

  sim::print_report(result.report, std::cout);
  if (effects)
    print_slowdown_effects(*effects, result.report.iteration_time_s, options.slowdowns_file);
  const costmodel::ComputeModel compute(sim_options.calibration, sim_options.profile);
  traces::Trace& trace = result.trace;
  if (options.trace_kernels)
    trace.kernels = traces::predicted_kernel_events(trace, schedule, scenario->cluster, scenario->workload, compute,
                                                    plan.dtype, 1.0);
  const double analytic = strategies::estimate(plan, problem, compute).iteration_time_s;
  std::printf("analytic estimate: %.4g s (simulated / analytic = %.3f)\n", analytic,
              result.report.iteration_time_s / analytic);
  const costmodel::PredictionBand band = strategies::plan_band(plan, problem, compute, result.report.iteration_time_s,
                                                                       sim::exposed_comm_share(result.report));
  std::cout << "iteration time band: " << band.describe(result.report.iteration_time_s) << '\n';
  const strategies::MemoryVerdict verdict = strategies::memory_verdict(memory);
  std::cout << "memory: " << verdict.text() << '\n';
  std::vector<std::string> confidence;
  if (calibration)
    confidence = calibration_confidence(*calibration, plan, scenario->cluster, scenario->workload);
  print_calibration_confidence(confidence);
  std::optional<GoodputFigures> goodput;
  if (failures) {
    goodput = goodput_of(*failures, plan, problem, result.report);
    print_goodput(*goodput, *failures, std::cout);
  }

  if (!options.report_file.empty()) {
    nlohmann::json report = sim::report_to_json(result.report);
    report["iteration_time_s_band"] = {band.low, band.high};
    report["band_reasons"]          = band.reasons;
    report["memory_verdict"]        = verdict.name();
    if (calibration) {
      report["calibration_confidence"] = confidence;
      report["calibrated_gpus"]        = calibrated_gpus;
    }
    if (goodput)
      report["goodput"] = goodput_to_json(*goodput);
    if (effects)
      report["slowdowns"] = slowdown_effects_json(*effects, result.report.iteration_time_s);
    write_file_atomically(options.report_file, report.dump(1) + "\n");
    std::cout << "report written to " << options.report_file << '\n';
  }
  if (!options.trace_file.empty()) {
    traces::write_chrome_trace(trace, options.trace_file);
    std::cout << "trace written to " << options.trace_file << " (open it in https://ui.perfetto.dev)\n";
  }
  return 0;
}

} // namespace

CommandRunner add_simulate_command(CLI::App& app)
{
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate", "Replay one training iteration of a plan in the SimGrid simulator and report time, throughput, "
                  "MFU and per-device compute/comm/idle time. Without --cluster/--model/--plan it runs the "
                  "default scenario: GPT-3 1.3B on case5_worldwide_geo (64 V100 in 8 regions), 8-stage 1F1B x "
                  "8-way data parallel, global batch 1,024, micro-batch 4.");
  options->scenario.add_to(*command);
  command->add_option("--report", options->report_file, "write the report as JSON to this file");
  command->add_option("--trace", options->trace_file, "write a Chrome trace-event JSON timeline (Perfetto) to this file");
  command->add_option("--calibration", options->calibration_file, "calibration JSON replacing the default cost model figures");
  command->add_option("--profile", options->profile_file,
                      "measured per-layer forward times (JSON) replacing the compute model where they apply");
  add_failures_option(*command, options->failures_file);
  command->add_option("--slowdowns", options->slowdowns_file,
                      "what-if file of stragglers and slow links: devices computing, NICs or region links moving at "
                      "a fraction of their peak for a window of the iteration (docs/failures.md); the report adds "
                      "the iteration without them and with each alone; replayed without folding");
  command->add_option("--jobs", options->jobs_file,
                      "jobs file: several jobs, each a model and a plan (or a planner) on nodes of its own, replayed "
                      "together on --cluster's network; the report gives each job's slowdown against running alone "
                      "and the links they meet on (docs/failures.md)");
  command->add_flag("--trace-kernels", options->trace_kernels,
                    "also write each compute task's kernels to the trace, its simulated time divided as the cost "
                    "model divides it (compare with `hetsim run --trace-kernels`)");
  command->add_option("--trace-devices", options->trace_devices,
                      "write only these devices' events to the trace, e.g. 0,8-15 (one per pipeline stage keeps a "
                      "thousand-GPU trace small), or `representatives`: the devices a folded replay replayed");
  command->add_flag("--exact", options->exact,
                    "replay every device, even those that identical devices on equivalent links would stand for, "
                    "and every micro-batch, even those a 1F1B pipeline's repeated steady state would stand for (by "
                    "default both fold: see docs/modelling.md, Folding)");
  command->add_flag("--allow-oom", options->allow_oom, "simulate a plan even when a device runs out of memory");
  command->add_flag("--analytic-intra-node", options->analytic_intra_node,
                    "time collectives that stay inside one node with the alpha-beta model instead of flows "
                    "(faster on large clusters)");
  command->add_flag("--pipelined-rings", options->pipelined_rings,
                    "move each ring collective phase as one flow per member, as NCCL pipelines chunks, instead of "
                    "step by step (far fewer transfers on large clusters)");
  return [options] { return run_simulate(*options); };
}

} // namespace hetsim::cli
