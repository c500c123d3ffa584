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

double ComputeModel::layers_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end,
                                    int tp, int samples, Dtype dtype, bool backward, bool recompute) const
{
  if (profiled(gpu, tp)) {
    // The model's own curve: time in proportion to tokens over the efficiency they reach.
    const LayerProfile::BatchCurve curve = [&](double batch) {
      const double tokens = batch * workload.seq_len;
      return tokens / efficiency(gpu, tokens);
    };
    double seconds = 0;
    for (int l = first; l < end; ++l) {
      seconds += *profile_->layer_seconds(gpu.name, tp, l, samples, backward, curve);
      if (backward && recompute)
        seconds += *profile_->layer_seconds(gpu.name, tp, l, samples, false, curve);
    }
    return seconds;
  }
  double flops = 0;
  for (int l = first; l < end; ++l) {
    const auto& layer = workload.layers[l];
    flops += backward ? layer.backward_flops_per_sample + (recompute ? layer.forward_flops_per_sample : 0)
                      : layer.forward_flops_per_sample;
  }
  return compute_seconds(gpu, flops * samples / tp, dtype, static_cast<double>(samples) * workload.seq_len);
}

bool ComputeModel::profiled(const Cluster& cluster, const std::vector<int>& group, int tp) const
{
  for (int device : group)
    if (!profiled(cluster.gpu_of(device), tp))
      return false;
  return !group.empty();
}

double ComputeModel::optimizer_seconds(const GpuSpec& gpu, double params) const
{
  return params * kOptimizerBytesPerParam / gpu.memory_bandwidth_bytes_per_s;
}

} // namespace hetsim::costmodel
