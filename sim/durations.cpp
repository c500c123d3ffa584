#include "sim/durations.hpp"

#include "costmodel/collective.hpp"
#include "costmodel/compute.hpp"

namespace hetsim::sim {

using strategies::TaskKind;

std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster,
                                                                   const models::Workload& workload,
                                                                   const strategies::Plan& plan,
                                                                   const costmodel::Calibration* calibration,
                                                                   const costmodel::LayerProfile* profile)
{
  return [&cluster, &workload, profile, tp = plan.tp, dtype = plan.dtype, recompute = plan.recompute,
          model = costmodel::ComputeModel(calibration, profile)](const strategies::Task& task) {
    const GpuSpec& gpu = cluster.gpu_of(task.device);
    if (task.kind == TaskKind::optimizer)
      return model.optimizer_seconds(gpu, task.params);
    const bool backward = task.kind == TaskKind::backward;
    if (profile && task.first_layer >= 0 && profile->covers(gpu.name, tp)) {
      // A task may be one piece of a layer split around its tensor-parallel all-reduces: its FLOPs say which share.
      double layer_flops = 0;
      for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l) {
        const auto& layer = workload.layers[l];
        layer_flops += backward ? layer.backward_flops_per_sample + (recompute ? layer.forward_flops_per_sample : 0)
                                : layer.forward_flops_per_sample;
      }
      const double share = layer_flops > 0 ? task.flops / (layer_flops * task.samples / tp) : 1;
      return share * model.layers_seconds(gpu, workload, task.first_layer, task.first_layer + task.layer_count, tp,
                                          task.samples, dtype, backward, recompute);
    }
    return model.compute_seconds(gpu, task.flops, dtype, static_cast<double>(task.samples) * workload.seq_len);
  };
}

std::function<std::optional<double>(const strategies::Collective&)> analytic_intra_node_time(const Cluster& cluster)
{
  return [&cluster](const strategies::Collective& collective) -> std::optional<double> {
    for (int d : collective.devices)
      if (cluster.device(d).node != cluster.device(collective.devices[0]).node)
        return std::nullopt;
    costmodel::CollectiveOp op = costmodel::CollectiveOp::all_reduce;
    if (collective.kind == TaskKind::reduce_scatter)
      op = costmodel::CollectiveOp::reduce_scatter;
    else if (collective.kind == TaskKind::all_gather)
      op = costmodel::CollectiveOp::all_gather;
    return costmodel::collective_seconds(cluster, collective.devices, op,
                                         static_cast<costmodel::Algorithm>(collective.algorithm), collective.bytes);
  };
}

std::function<bool(const strategies::Collective&)> inside_layer_profile(const Cluster& cluster,
                                                                        const strategies::Schedule& schedule,
                                                                        const strategies::Plan& plan,
                                                                        const costmodel::LayerProfile* profile)
{
  return [&cluster, &schedule, model = costmodel::ComputeModel(nullptr, profile),
          tp = plan.tp](const strategies::Collective& collective) {
    return !collective.tasks.empty() &&
           schedule.tasks[collective.tasks.front()].stream == strategies::Stream::tensor_parallel &&
           model.profiled(cluster, collective.devices, tp);
  };
}

} // namespace hetsim::sim
