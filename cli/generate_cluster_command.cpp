/// `hetsim generate-cluster`: a geo-distributed cluster file from a few numbers (see core/cluster_generator.hpp).

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "core/cluster_generator.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "sim/report/report_format.hpp"

#include <cmath>

#include <cstdio>
#include <iostream>

namespace hetsim::cli {
namespace {

struct GenerateOptions {
  GeoClusterSpec spec;
  std::string regions = "4";
  std::string latency_ms   = "10:250";
  std::string bandwidth_gbps = "0.3:1.3";
  std::string out_file;
};

/// "MIN:MAX" or a single value, each inside [lowest, highest] (the bounds a cluster file's links have).
void parse_range(const std::string& text, const char* option, double lowest, double highest, double& lo, double& hi)
{
  const auto colon = text.find(':');
  const auto number = [&](const std::string& part) {
    std::size_t used = 0;
    double value     = std::nan("");
    try {
      value = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || !(value >= lowest && value <= highest))
      throw InputError(std::string(option) + ": expected MIN:MAX or a number, each from " + sim::format("%g", lowest) +
                       " to " + sim::format("%g", highest) + ", got " + quote(text));
    return value;
  };
  lo = number(text.substr(0, colon));
  hi = colon == std::string::npos ? lo : number(text.substr(colon + 1));
  if (lo > hi)
    throw InputError(std::string(option) + ": expected MIN:MAX with MIN at most MAX, got " + quote(text));
}

int run_generate(GenerateOptions options)
{
  if (options.out_file.empty())
    throw InputError("generate-cluster: give --out (the cluster JSON to write)");
  options.spec.regions = region_names(options.regions);
  check_output(options.out_file, {}, "--out");
  // The bounds of a cluster file's links (core/cluster_json.cpp): 100 s of latency, 1 kbit/s to 100 Tbit/s.
  parse_range(options.latency_ms, "--latency-ms", 0, 1e5, options.spec.latency_ms_min, options.spec.latency_ms_max);
  parse_range(options.bandwidth_gbps, "--bandwidth-gbps", 1e-6, 1e5, options.spec.bandwidth_gbps_min,
              options.spec.bandwidth_gbps_max);
  const nlohmann::json json = generate_geo_cluster(options.spec);
  const Cluster cluster     = cluster_from_json(json, options.out_file); // what load_cluster will accept
  write_file_atomically(options.out_file, json.dump(1) + "\n");
  std::cout << "generate-cluster: " << cluster.regions().size() << " regions, " << cluster.device_count()
            << " devices written to " << options.out_file << '\n';
  return 0;
}

} // namespace

CommandRunner add_generate_cluster_command(CLI::App& app)
{
  auto options      = std::make_shared<GenerateOptions>();
  CLI::App* command = app.add_subcommand(
      "generate-cluster", "Write a geo-distributed cluster file: regions of single-GPU machines joined by seeded "
                          "random inter-region latency and bandwidth (the shape of the case4/case5 presets).");
  auto& s = options->spec;
  command->add_option("--regions", options->regions, "a count, or comma-separated region names (default 4)");
  command->add_option("--devices-per-region", s.devices_per_region, "GPUs per region (default 8)");
  command->add_option("--gpu", s.gpu, "GPU name from the catalog (default V100-SXM2-16GB)");
  command->add_option("--intra-latency-ms", s.intra_latency_ms, "latency inside a region (default 5)")
      ->check(finite_in(0, 1e5));
  command->add_option("--intra-bandwidth-gbps", s.intra_bandwidth_gbps, "each machine's bandwidth (default 2)")
      ->check(finite_in(1e-6, 1e5));
  command->add_option("--latency-ms", options->latency_ms, "inter-region latency range MIN:MAX (default 10:250)");
  command->add_option("--bandwidth-gbps", options->bandwidth_gbps,
                      "inter-region bandwidth range MIN:MAX (default 0.3:1.3)");
  command->add_flag("--asymmetric", s.asymmetric_bandwidth, "draw each direction's bandwidth separately");
  command->add_option("--seed", s.seed, "seed of the draws (default 1)");
  command->add_option("--name", s.name, "cluster name (default generated)");
  command->add_option("--out", options->out_file, "cluster JSON to write");
  return [options] { return run_generate(*options); };
}

} // namespace hetsim::cli
