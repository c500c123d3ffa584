#include "core/cluster_generator.hpp"

#include "core/cluster.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace hetsim {
namespace {

void check_range(double lo, double hi, const char* what, bool allow_zero)
{
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi || lo < 0 || (!allow_zero && lo == 0))
    throw InputError(std::string("generate-cluster: ") + what + ": expected a range MIN:MAX with 0 " +
                     (allow_zero ? "<=" : "<") + " MIN <= MAX, got " + std::to_string(lo) + ":" + std::to_string(hi));
}

/// Uniform in [lo, hi], rounded to 3 significant decimals so that files read well and compare exactly.
double draw(std::mt19937_64& rng, double lo, double hi)
{
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::round((lo + u * (hi - lo)) * 1000) / 1000;
}

} // namespace

std::vector<std::string> region_names(const std::string& text)
{
  std::vector<std::string> names;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    // Every pair of regions gets a latency and a bandwidth: the file grows with the square of the count.
    if (text.size() > 9 || std::stol(text) > kMaxGeneratedRegions)
      throw InputError("generate-cluster: --regions: expected a count of at most " +
                       std::to_string(kMaxGeneratedRegions) + " (its region pairs make the file), got " + text);
    const int count = std::stoi(text);
    for (int r = 0; r < count; ++r)
      names.push_back("region" + std::to_string(r));
    return names;
  }
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty())
      continue;
    // The names go into the file and every message about it: one line each, and each its own.
    if (name.size() > 200 || holds_control_characters(name))
      throw InputError("generate-cluster: --regions: expected names of 1 to 200 characters without control "
                       "characters, got " + quote(name));
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw InputError("generate-cluster: --regions: expected each region once, got " + quote(name) + " twice");
    names.push_back(name);
  }
  return names;
}

nlohmann::json generate_geo_cluster(const GeoClusterSpec& spec)
{
  const int n = static_cast<int>(spec.regions.size());
  if (n == 0)
    throw InputError("generate-cluster: --regions: expected a count or comma-separated names, got none");
  if (n > kMaxGeneratedRegions)
    throw InputError("generate-cluster: --regions: expected at most " + std::to_string(kMaxGeneratedRegions) +
                     " regions (their pairs make the file), got " + std::to_string(n));
  if (spec.devices_per_region <= 0 || spec.devices_per_region > Cluster::kMaxDevices / n)
    throw InputError("generate-cluster: --devices-per-region: expected a positive count of at most " +
                     std::to_string(Cluster::kMaxDevices / n) + " (" + std::to_string(Cluster::kMaxDevices) +
                     " devices in all over " + std::to_string(n) + " regions), got " +
                     std::to_string(spec.devices_per_region));
  if (!(spec.intra_bandwidth_gbps > 0) || !(spec.intra_latency_ms >= 0))
    throw InputError("generate-cluster: the intra-region link needs a positive bandwidth and a latency >= 0");
  check_range(spec.latency_ms_min, spec.latency_ms_max, "--latency-ms", true);
  check_range(spec.bandwidth_gbps_min, spec.bandwidth_gbps_max, "--bandwidth-gbps", false);

  std::mt19937_64 rng(spec.seed);
  std::vector<std::vector<double>> latency(n, std::vector<double>(n, 0.0)), bandwidth = latency;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      latency[i][j] = latency[j][i] = draw(rng, spec.latency_ms_min, spec.latency_ms_max);
      bandwidth[i][j] = draw(rng, spec.bandwidth_gbps_min, spec.bandwidth_gbps_max);
      bandwidth[j][i] = spec.asymmetric_bandwidth ? draw(rng, spec.bandwidth_gbps_min, spec.bandwidth_gbps_max)
                                                  : bandwidth[i][j];
    }
  nlohmann::json json;
  json["name"]        = spec.name;
  json["description"] = "generated: " + std::to_string(n) + " regions x " + std::to_string(spec.devices_per_region) +
                        " " + spec.gpu + ", seed " + std::to_string(spec.seed);
  json["gpu"]                = spec.gpu;
  json["regions"]            = spec.regions;
  json["devices_per_region"] = spec.devices_per_region;
  json["intra_region"]       = {{"latency_ms", spec.intra_latency_ms}, {"bandwidth_gbps", spec.intra_bandwidth_gbps}};
  if (n > 1) {
    json["latency_ms"]     = latency;
    json["bandwidth_gbps"] = bandwidth;
  }
  return json;
}

} // namespace hetsim
