/// `hetsim calibrate`: fit compute efficiencies and link α/β to measured traces.

#include "cli/command.hpp"
#include "cli/scenario.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "sim/replay_calibration.hpp"
#include "traces/calibrate.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace hetsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> traces;
  std::vector<std::string> plans; ///< with cluster and model: refine the links by replaying these runs
  std::string cluster;
  std::string model;
  std::string out;
};

/// Replays each calibration run in the simulator and rescales the link classes until it reproduces them.
costmodel::Calibration refine_by_replay(const CalibrateOptions& options, const std::vector<traces::Trace>& measured,
                                        const costmodel::Calibration& first_fit)
{
  if (options.cluster.empty() || options.model.empty())
    throw InputError("calibrate: --plan needs --cluster and --model (the runs are replayed in the simulator)");
  if (options.plans.size() != options.traces.size())
    throw InputError("calibrate: give one --plan per --trace (got " + std::to_string(options.traces.size()) +
                     " traces and " + std::to_string(options.plans.size()) + " plans)");
  std::vector<MeasuredRun> loaded;
  std::vector<sim::CalibrationRun> runs;
  for (std::size_t i = 0; i < options.plans.size(); ++i) {
    loaded.push_back(load_measured_run(options.cluster, options.model, options.plans[i], measured[i].scale));
    if (loaded.back().schedule.tasks.size() != measured[i].events.size())
      throw InputError("calibrate: " + options.traces[i] + " has " + std::to_string(measured[i].events.size()) +
                       " tasks but the schedule of " + options.plans[i] + " has " +
                       std::to_string(loaded.back().schedule.tasks.size()) + " (was it measured with that plan?)");
  }
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

int run_calibrate(const CalibrateOptions& options)
{
  auto inputs = options.traces;
  inputs.insert(inputs.end(), options.plans.begin(), options.plans.end());
  for (const auto* file : {&options.cluster, &options.model})
    if (!file->empty())
      inputs.push_back(*file);
  check_output_is_not_input(options.out, inputs, "--out");
  std::vector<traces::Trace> loaded;
  for (const auto& file : options.traces)
    loaded.push_back(traces::read_chrome_trace(file));
  std::vector<std::string> skipped;
  costmodel::Calibration calibration = traces::calibrate(loaded, &skipped);
  for (const auto& line : skipped)
    std::cerr << "warning: " << line << " (left out)\n";
  if (!options.plans.empty())
    calibration = refine_by_replay(options, loaded, calibration);
  for (const auto& [gpu, points] : calibration.efficiency_points) {
    std::cout << "compute " << gpu << ":";
    for (const auto& [tokens, efficiency] : points)
      std::printf(" %g tokens %.3g%%;", tokens, 100 * efficiency);
    std::cout << '\n';
  }
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
                   "micro-batch tokens; per link class (intra_node, inter_node, inter_region), latency alpha, "
                   "seconds per byte beta and a per-collective overhead by least squares (refined by replaying the "
                   "runs when --plan is given). Use the result with --calibration.");
  command->add_option("--trace", options->traces, "measured trace (trace.json of `hetsim run`); repeat for several")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--plan", options->plans,
                      "the plan each trace measured (repeat, in --trace order): the runs are replayed in the "
                      "simulator and each link class rescaled until the replay matches, so that links the "
                      "calibration runs shared are not mistaken for slow ones");
  command->add_option("--cluster", options->cluster, "cluster JSON file, or preset:NAME (with --plan)");
  command->add_option("--model", options->model, "model JSON file, or preset:NAME (with --plan)");
  command->add_option("--out", options->out, "calibration JSON to write")->required();
  return [options] { return run_calibrate(*options); };
}

} // namespace hetsim::cli
