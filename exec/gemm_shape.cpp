#include "exec/gemm_shape.hpp"

#include "core/error.hpp"
#include "strategies/lowering/scale.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::exec {
namespace {

/// Hidden size of a layer from its parameters: a transformer block holds about 12 h^2 weights (QKV, output
/// projection, a 4h MLP); other layers are taken as one square matrix.
double hidden_size(const models::Layer& layer)
{
  if (layer.params <= 0)
    return 64; // parameter-free layers (e.g. attention scores alone) still multiply activations
  return std::max(1.0, std::round(std::sqrt(layer.params / (layer.kind == "transformer" ? 12.0 : 1.0))));
}

double layer_flops(const models::Layer& layer, bool backward)
{
  return backward ? layer.backward_flops_per_sample : layer.forward_flops_per_sample;
}

} // namespace

std::vector<Gemm> task_gemms(const strategies::Task& task, const models::Workload& model, int tp, double scale)
{
  HETSIM_ASSERT(task.first_layer >= 0 && task.first_layer + task.layer_count <= static_cast<int>(model.layers.size()));
  const bool backward = task.kind == strategies::TaskKind::backward;
  double total        = 0;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
    total += layer_flops(model.layers[l], backward);
  std::vector<Gemm> gemms;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l) {
    const models::Layer& layer = model.layers[l];
    const double share         = total > 0 ? layer_flops(layer, backward) / total : 1.0 / task.layer_count;
    const double flops         = strategies::scaled_flops(task, scale) * share;
    if (flops <= 0)
      continue;
    const double hidden = hidden_size(layer);
    const double width  = layer.params > 0 ? layer.params / tp / hidden : hidden;
    Gemm gemm;
    gemm.k = std::max(1L, std::lround(hidden * scale));
    gemm.n = std::max(1L, std::lround(width * scale));
    gemm.m = std::max(1L, std::lround(flops / (2.0 * static_cast<double>(gemm.k) * static_cast<double>(gemm.n))));
    gemms.push_back(gemm);
  }
  return gemms;
}

long optimizer_elements(const strategies::Task& task, double scale)
{
  return std::max(1L, std::lround(strategies::scaled_params(task, scale)));
}

} // namespace hetsim::exec
