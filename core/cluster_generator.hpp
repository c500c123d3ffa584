#pragma once
/// Custom geo-distributed clusters: regions x single-GPU machines per region x an intra-region link x seeded
/// inter-region latency and bandwidth matrices drawn from ranges (or given), written in the compact geo shape
/// that load_cluster reads (the same shape as the shared/data/geo presets).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hetsim {

/// Regions a generated cluster may have: its latency and bandwidth matrices hold every pair (a million entries).
constexpr int kMaxGeneratedRegions = 1024;

struct GeoClusterSpec {
  std::string name = "generated";
  std::vector<std::string> regions; ///< names; their count is the number of regions
  int devices_per_region     = 8;
  std::string gpu            = "V100-SXM2-16GB";
  double intra_latency_ms    = 5;
  double intra_bandwidth_gbps = 2;
  double latency_ms_min = 10, latency_ms_max = 250;          ///< uniform draws per region pair
  double bandwidth_gbps_min = 0.3, bandwidth_gbps_max = 1.3; ///< uniform draws
  bool asymmetric_bandwidth = false; ///< draw each direction of a pair on its own (latency stays symmetric)
  std::uint64_t seed        = 1;
};

/// The cluster file as JSON. Same spec and seed, same bytes. Throws InputError for an empty region list or one
/// over kMaxGeneratedRegions, a device count that is not positive or passes Cluster::kMaxDevices in all, or an
/// empty or negative range.
nlohmann::json generate_geo_cluster(const GeoClusterSpec& spec);

/// "A,B,C" -> names; "4" -> region0 .. region3. Throws InputError for a count above kMaxGeneratedRegions.
std::vector<std::string> region_names(const std::string& text);

} // namespace hetsim
