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
  double params = 0, largest[2] = {0, 0};
  for (int l : layers) {
    const double p = std::round(model.layers[l].params / schedule.tp * scale * scale);
    params += p;
    if (p > largest[0])
      largest[1] = std::exchange(largest[0], p);
    else
      largest[1] = std::max(largest[1], p);
  }
  const strategies::DeviceMemory states =
      strategies::zero_model_states(params, largest[0] + largest[1], schedule.zero_stage, schedule.dp, dtype);
  return ModelStateBytes{static_cast<std::size_t>(std::ceil(states.parameter_bytes)),
                         static_cast<std::size_t>(std::ceil(states.gradient_bytes))};
}

std::size_t saved_activation_bytes(const models::Layer& layer, int samples, int tp, Dtype dtype, double scale)
{
  // Layer figures are 16-bit; activations shrink with hidden sizes.
  const double per_sequence = layer.saved_activation_bytes_per_sample / tp * scale * dtype_bytes(dtype) / 2.0;
  return static_cast<std::size_t>(std::ceil(per_sequence)) * static_cast<std::size_t>(std::max(samples, 0));
}

} // namespace hetsim::exec
