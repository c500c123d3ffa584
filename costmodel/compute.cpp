#include "costmodel/compute.hpp"

namespace hetsim::costmodel {

double ComputeModel::efficiency(const GpuSpec& gpu, double tokens) const
{
  if (calibration_) {
    const double fitted = calibration_->efficiency(gpu.name, tokens);
    if (fitted > 0)
      return fitted;
  }
  return kMaxEfficiency * tokens / (tokens + kHalfEfficiencyTokens);
}

double ComputeModel::compute_seconds(const GpuSpec& gpu, double flops, Dtype dtype, double tokens) const
{
  if (flops <= 0)
    return 0;
  return flops / (gpu.peak_flops(dtype) * efficiency(gpu, tokens > 0 ? tokens : 1));
}

double ComputeModel::optimizer_seconds(const GpuSpec& gpu, double params) const
{
  return params * kOptimizerBytesPerParam / gpu.memory_bandwidth_bytes_per_s;
}

} // namespace hetsim::costmodel
