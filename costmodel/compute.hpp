#pragma once
/// Time of computation on one GPU: FLOPs over peak times an efficiency that grows with the batch.
/// Without calibration the efficiency is `max_efficiency * tokens / (tokens + half_efficiency_tokens)`,
/// a saturating curve; a Calibration replaces it per GPU type.

#include "core/dtype.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/calibration.hpp"

namespace hetsim::costmodel {

class ComputeModel {
public:
  explicit ComputeModel(const Calibration* calibration = nullptr) : calibration_(calibration) {}

  /// Fraction of peak reached on a micro-batch of `tokens` tokens.
  double efficiency(const GpuSpec& gpu, double tokens) const;
  double compute_seconds(const GpuSpec& gpu, double flops, Dtype dtype, double tokens) const;
  /// Adam step: reads and writes fp32 master weights, two moments and the 16-bit copy (memory bound).
  double optimizer_seconds(const GpuSpec& gpu, double params) const;

  static constexpr double kMaxEfficiency       = 0.6;
  static constexpr double kHalfEfficiencyTokens = 512;
  static constexpr double kOptimizerBytesPerParam = 36; ///< 3 fp32 reads + 3 fp32 writes + one 16-bit write + grad read

private:
  const Calibration* calibration_;
};

} // namespace hetsim::costmodel
