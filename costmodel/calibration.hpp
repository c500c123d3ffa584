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

/// How far one kind of kernel stayed from its measured time after the fit: relative errors per kernel.
struct FitError {
  int kernels         = 0;
  double median_error = 0;
  double p90_error    = 0;
};

/// What the kernel constants of one GPU type were fitted to: a figure priced with them says how sure it is and
/// whether it leaves what they covered.
struct CalibrationEvidence {
  std::string source;       ///< "pytorch profiler"
  int traces        = 0;
  double min_tokens = 0;    ///< the smallest and largest micro-batch (tokens) the traces ran
  double max_tokens = 0;
  std::map<std::string, FitError> errors; ///< by kind of kernel: "matmul", "attention", "memory", ...
};

/// What a model family's traces showed beyond the GPU's constants: its elementwise kernels against the model's
/// (kernels its eager operators leave out), fitted after the GPU's constants and applied to that family only.
struct FamilyCalibration {
  double elementwise_scale = 1; ///< measured over modelled memory-bound time (elementwise and loss kernels)
  std::string fitted_on;        ///< the GPU type of the traces
  int traces = 0;
};

struct Calibration {
  /// GPU name -> (tokens, efficiency) points sorted by tokens.
  std::map<std::string, std::vector<std::pair<double, double>>> efficiency_points;
  /// GPU name -> kernel constants fitted to measured layer times: they price a layer that has operators
  /// (taking precedence over efficiency points there).
  std::map<std::string, KernelConstants> kernels;
  /// GPU name -> what its kernel constants were fitted to (PyTorch profiler traces), when known.
  std::map<std::string, CalibrationEvidence> evidence;
  /// Model type ("llama", "gpt2": TransformerShape::type_name) -> its eager operators' missing elementwise work.
  std::map<std::string, FamilyCalibration> families;
  /// "intra_node", "inter_node", "inter_region" -> fitted α, β.
  std::map<std::string, LinkCalibration> links;

  /// Whether `gpu` has fitted efficiencies.
  bool calibrates(const std::string& gpu) const;
  /// Interpolated efficiency, or a negative value when the GPU is not calibrated.
  double efficiency(const std::string& gpu, double tokens) const;
};

/// Lines saying how sure a figure priced on `gpu` at `tokens` per micro-batch is: the error the calibrating
/// traces left by kind, and whether `tokens` lies inside what they covered or how far beyond. Empty when the
/// calibration has no evidence for `gpu`.
std::vector<std::string> calibration_confidence(const Calibration& calibration, const std::string& gpu,
                                                double tokens);

Calibration load_calibration(const std::string& file);
Calibration calibration_from_json(const nlohmann::json& json, const std::string& origin);
nlohmann::json calibration_to_json(const Calibration& calibration);

} // namespace hetsim::costmodel
