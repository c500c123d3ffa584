#include "costmodel/compute.hpp"

#include "costmodel/kernel_time.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::costmodel {

double ComputeModel::compute_seconds(const GpuSpec& gpu, double flops, Dtype dtype, double tokens) const
{
  if (flops <= 0)
    return 0;
  tokens = std::max(tokens, 1.0);
  if (calibration_) {
    const double fitted = calibration_->efficiency(gpu.name, tokens);
    if (fitted > 0)
      return flops / (gpu.peak_flops(dtype) * fitted);
  }
  const double width = std::sqrt(flops / (2 * tokens));
  return matmul_seconds(gpu, constants(gpu), tokens, width, width, 1, dtype);
}

double ComputeModel::modelled_layer_seconds(const GpuSpec& gpu, const models::Workload& workload, int l, int tp,
                                            double samples, Dtype dtype, bool backward, bool sequence_parallel,
                                            bool weight_gradients_only) const
{
  const models::Layer& layer = workload.layers[l];
  const bool fitted_kernels  = calibration_ && calibration_->kernels.count(gpu.name);
  const bool fitted_layers   = calibration_ && calibration_->calibrates(gpu.name) && !fitted_kernels;
  if (fitted_layers || layer.operators.empty()) {
    const double flops = (backward ? layer.backward_flops_per_sample : layer.forward_flops_per_sample) *
                         (weight_gradients_only ? 0.5 : 1.0);
    return compute_seconds(gpu, flops * samples / tp, dtype, samples * workload.seq_len);
  }
  const PassKey key{gpu.name, gpu.peak_flops(dtype), gpu.memory_bandwidth_bytes_per_s, gpu.multiprocessors,
                    &layer,   layer.forward_flops_per_sample,  tp, samples, dtype, backward, sequence_parallel,
                    weight_gradients_only};
  {
    std::lock_guard lock(cache_->mutex);
    if (auto it = cache_->seconds.find(key); it != cache_->seconds.end())
      return it->second;
  }
  double seconds = 0;
  if (weight_gradients_only) {
    std::vector<models::Kernel> kernels;
    for (const models::Operator& op : layer.operators)
      for (models::Kernel& kernel : models::operator_kernels(op, tp, samples, true, sequence_parallel))
        if (kernel.weight_gradient)
          kernels.push_back(std::move(kernel));
    seconds = kernels_seconds(gpu, constants(gpu, workload), kernels, dtype);
  } else {
    seconds = operators_seconds(gpu, constants(gpu, workload), layer.operators, tp, samples, dtype, backward,
                                sequence_parallel);
  }
  std::lock_guard lock(cache_->mutex);
  cache_->seconds.emplace(key, seconds);
  return seconds;
}

KernelConstants ComputeModel::constants(const GpuSpec& gpu) const
{
  if (calibration_)
    if (auto it = calibration_->kernels.find(gpu.name); it != calibration_->kernels.end())
      return it->second;
  return kernel_constants(gpu);
}

KernelConstants ComputeModel::constants(const GpuSpec& gpu, const models::Workload& workload) const
{
  KernelConstants c = constants(gpu);
  if (calibration_ && workload.shape && workload.shape->eager)
    if (auto it = calibration_->families.find(workload.shape->type_name()); it != calibration_->families.end())
      c.elementwise_scale = it->second.elementwise_scale;
  return c;
}

double ComputeModel::layers_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end,
                                    int tp, double samples, Dtype dtype, bool backward, bool recompute,
                                    bool sequence_parallel) const
{
  const bool measured = profiled(gpu, tp);
  double seconds      = 0;
  for (int l = first; l < end; ++l) {
    auto pass = [&](bool back) {
      if (!measured)
        return modelled_layer_seconds(gpu, workload, l, tp, samples, dtype, back, sequence_parallel);
      // Measured sizes anchor the model's own curve of this layer and pass.
      const LayerProfile::BatchCurve curve = [&](double batch) {
        return modelled_layer_seconds(gpu, workload, l, tp, batch, dtype, back, sequence_parallel);
      };
      return *profile_->layer_seconds(gpu.name, tp, l, samples, back, curve);
    };
    seconds += pass(backward);
    if (backward && recompute && models::recomputed(workload, l))
      seconds += pass(false);
  }
  return seconds;
}

double ComputeModel::weight_gradient_seconds(const GpuSpec& gpu, const models::Workload& workload, int first,
                                             int end, int tp, double samples, Dtype dtype,
                                             bool sequence_parallel) const
{
  double seconds = 0;
  for (int l = first; l < end; ++l) {
    const double backward = modelled_layer_seconds(gpu, workload, l, tp, samples, dtype, true, sequence_parallel);
    if (backward <= 0)
      continue;
    const double weights =
        modelled_layer_seconds(gpu, workload, l, tp, samples, dtype, true, sequence_parallel, true);
    seconds += layers_seconds(gpu, workload, l, l + 1, tp, samples, dtype, true, false, sequence_parallel) *
               std::min(1.0, weights / backward);
  }
  return seconds;
}

double ComputeModel::selective_recompute_seconds(const GpuSpec& gpu, const models::Workload& workload, int first,
                                                 int end, int tp, double samples, Dtype dtype,
                                                 bool sequence_parallel) const
{
  std::vector<models::Operator> rerun;
  for (int l = first; l < end; ++l)
    for (const models::Operator& op : workload.layers[l].operators)
      if (op.selectively_recomputed)
        rerun.push_back(op.selective_rerun());
  if (rerun.empty())
    return 0;
  return operators_seconds(gpu, constants(gpu, workload), rerun, tp, samples, dtype, false, sequence_parallel);
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
