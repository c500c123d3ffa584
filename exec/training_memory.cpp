#include "exec/training_memory.hpp"

#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace hetsim::exec {

ModelStateBytes model_state_bytes(const strategies::Schedule& schedule, const models::Workload& model, int rank,
                                  Dtype dtype, double scale)
{
  std::set<int> layers;
  for (int id : schedule.queues[rank][static_cast<int>(strategies::Stream::compute)]) {
    const strategies::Task& task = schedule.tasks[id];
    if (task.kind == strategies::TaskKind::forward)
      for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
        layers.insert(l);
  }
  double params = 0, experts = 0, largest[2] = {0, 0}, cast_elements = 0;
  for (int l : layers) {
    cast_elements += strategies::autocast_weight_elements(model.layers[l], schedule.tp) * scale * scale;
    // Its own routed experts only (ep), which ZeRO shards over the replicas that hold the same ones.
    const models::Layer& layer = model.layers[l];
    const double own = std::round(layer.expert_params / schedule.ep / schedule.tp * scale * scale);
    const double p   = std::round((layer.params - layer.expert_params) / schedule.tp * scale * scale) + own;
    params += p;
    experts += own;
    if (p > largest[0])
      largest[1] = std::exchange(largest[0], p);
    else
      largest[1] = std::max(largest[1], p);
  }
  strategies::DeviceMemory states =
      strategies::zero_model_states(params, largest[0] + largest[1], schedule.zero_stage, schedule.dp, dtype);
  if (schedule.ep > 1) { // as strategies::plan_memory counts them (ZeRO-3 is refused with ep)
    const auto dense = strategies::zero_model_states(params - experts, 0, schedule.zero_stage, schedule.dp, dtype);
    const auto held =
        strategies::zero_model_states(experts, 0, schedule.zero_stage, schedule.dp / schedule.ep, dtype);
    states.parameter_bytes = dense.parameter_bytes + held.parameter_bytes;
    states.gradient_bytes  = dense.gradient_bytes + held.gradient_bytes;
    states.optimizer_bytes = dense.optimizer_bytes + held.optimizer_bytes;
  }
  if (model.shape && model.shape->autocast)
    states = strategies::autocast_model_states(states, cast_elements, dtype);
  return ModelStateBytes{static_cast<std::size_t>(std::ceil(states.parameter_bytes)),
                         static_cast<std::size_t>(std::ceil(states.gradient_bytes)),
                         static_cast<std::size_t>(std::ceil(states.optimizer_bytes))};
}

std::size_t saved_activation_bytes(const models::Layer& layer, int samples, int tp, bool sequence_parallel,
                                   Dtype dtype, double scale, int cp)
{
  // Layer figures are 16-bit; activations shrink with hidden sizes. Without sequence parallelism the replicated
  // part stays whole on every member (strategies::plan_memory).
  const double whole        = tp > 1 && !sequence_parallel ? layer.replicated_saved_bytes_per_sample : 0;
  const double kept         = (layer.saved_activation_bytes_per_sample - whole) / tp + whole;
  const double per_sequence = kept * scale * dtype_bytes(dtype) / 2.0 / cp;
  return static_cast<std::size_t>(std::ceil(per_sequence)) * static_cast<std::size_t>(std::max(samples, 0));
}

std::size_t kept_activation_bytes(const models::Workload& model, const strategies::Schedule& schedule, int l,
                                  int samples, Dtype dtype, double scale)
{
  const models::Layer& layer = model.layers[l];
  if (!schedule.recompute || !models::recomputed(model, l))
    return saved_activation_bytes(layer, samples, schedule.tp, schedule.sequence_parallel, dtype, scale, schedule.cp);
  // The layer's input, split over the tensor-parallel group only with sequence parallelism (plan_memory's rule).
  const double split        = schedule.sequence_parallel || schedule.tp == 1 ? schedule.tp : 1;
  const double per_sequence = layer.activation_bytes_per_sample / split * scale * dtype_bytes(dtype) / 2.0 / schedule.cp;
  return static_cast<std::size_t>(std::ceil(per_sequence)) * static_cast<std::size_t>(std::max(samples, 0));
}

} // namespace hetsim::exec
