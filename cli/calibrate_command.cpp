/// `hetsim calibrate`: fit compute efficiencies and link α/β to measured traces.

#include "cli/command.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "traces/calibrate.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace hetsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> traces;
  std::string out;
};

int run_calibrate(const CalibrateOptions& options)
{
  check_output_is_not_input(options.out, options.traces, "--out");
  std::vector<traces::Trace> loaded;
  for (const auto& file : options.traces)
    loaded.push_back(traces::read_chrome_trace(file));
  std::vector<std::string> skipped;
  const costmodel::Calibration calibration = traces::calibrate(loaded, &skipped);
  for (const auto& line : skipped)
    std::cerr << "warning: " << line << " (left out)\n";
  for (const auto& [gpu, points] : calibration.efficiency_points) {
    std::cout << "compute " << gpu << ":";
    for (const auto& [tokens, efficiency] : points)
      std::printf(" %g tokens %.3g%%;", tokens, 100 * efficiency);
    std::cout << '\n';
  }
  for (const auto& [name, link] : calibration.links)
    std::printf("link %s: alpha %.4g s, beta %.4g s/byte (%.4g Gbit/s)\n", name.c_str(), link.alpha_s,
                link.beta_seconds_per_byte, 8e-9 / link.beta_seconds_per_byte);
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
                   "micro-batch tokens; per link class (intra_node, inter_node, inter_region), latency alpha and "
                   "seconds per byte beta by least squares. Use the result with --calibration.");
  command->add_option("--trace", options->traces, "measured trace (trace.json of `hetsim run`); repeat for several")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--out", options->out, "calibration JSON to write")->required();
  return [options] { return run_calibrate(*options); };
}

} // namespace hetsim::cli
