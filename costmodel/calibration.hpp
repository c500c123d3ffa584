#pragma once
/// Fitted parameters that replace the cost model's defaults: per GPU type, the kernel constants of its
/// operators (matrix-product ceiling, memory efficiency, launch cost), or else compute efficiency as a function
/// of tokens per micro-batch (points interpolated monotonically); per link class, latency and bandwidth.

#include "costmodel/kernel_time.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hetsim::costmodel {

struct LinkCalibration {
  double alpha_s                 = 0; ///< per-message latency
  double beta_seconds_per_byte   = 0; ///< inverse bandwidth
  /// Software cost of one collective call over this class, per member, beyond its transfers: launch,
  /// synchronisation, the library's bookkeeping (milliseconds for Gloo over TCP, microseconds for NCCL).
  double collective_overhead_s   = 0;
};

struct Calibration {
  /// GPU name -> (tokens, efficiency) points sorted by tokens.
  std::map<std::string, std::vector<std::pair<double, double>>> efficiency_points;
  /// GPU name -> kernel constants fitted to measured layer times: they price a layer that has operators
  /// (taking precedence over efficiency points there).
  std::map<std::string, KernelConstants> kernels;
  /// "intra_node", "inter_node", "inter_region" -> fitted α, β.
  std::map<std::string, LinkCalibration> links;

  /// Whether `gpu` has fitted efficiencies.
  bool calibrates(const std::string& gpu) const;
  /// Interpolated efficiency, or a negative value when the GPU is not calibrated.
  double efficiency(const std::string& gpu, double tokens) const;
};

Calibration load_calibration(const std::string& file);
Calibration calibration_from_json(const nlohmann::json& json, const std::string& origin);
nlohmann::json calibration_to_json(const Calibration& calibration);

} // namespace hetsim::costmodel
