/// `hetsim generate-cluster`: a geo-distributed cluster file from a few numbers (see core/cluster_generator.hpp).

#include "cli/command.hpp"
#include "core/cluster_generator.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"

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

/// "MIN:MAX" or a single value.
void parse_range(const std::string& text, const char* option, double& lo, double& hi)
{
  const auto colon = text.find(':');
  try {
    std::size_t used = 0;
    lo               = std::stod(text.substr(0, colon), &used);
    hi = colon == std::string::npos ? lo : std::stod(text.substr(colon + 1));
  } catch (const std::exception&) {
    throw InputError(std::string(option) + ": expected MIN:MAX or a number, got '" + text + "'");
  }
}

int run_generate(GenerateOptions options)
{
  if (options.out_file.empty())
    throw InputError("generate-cluster: give --out (the cluster JSON to write)");
  options.spec.regions = region_names(options.regions);
  parse_range(options.latency_ms, "--latency-ms", options.spec.latency_ms_min, options.spec.latency_ms_max);
  parse_range(options.bandwidth_gbps, "--bandwidth-gbps", options.spec.bandwidth_gbps_min,
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
  command->add_option("--intra-latency-ms", s.intra_latency_ms, "latency inside a region (default 5)");
  command->add_option("--intra-bandwidth-gbps", s.intra_bandwidth_gbps, "each machine's bandwidth (default 2)");
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
