#include "sim/durations.hpp"

#include "costmodel/collective.hpp"
#include "costmodel/compute.hpp"

namespace hetsim::sim {

using strategies::TaskKind;

std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster, Dtype dtype, int seq_len,
                                                                   const costmodel::Calibration* calibration)
{
  return [&cluster, dtype, seq_len, model = costmodel::ComputeModel(calibration)](const strategies::Task& task) {
    const GpuSpec& gpu = cluster.gpu_of(task.device);
    if (task.kind == TaskKind::optimizer)
      return model.optimizer_seconds(gpu, task.params);
    return model.compute_seconds(gpu, task.flops, dtype, static_cast<double>(task.samples) * seq_len);
  };
}

std::function<double(const strategies::Collective&)> analytic_collective_time(const Cluster& cluster)
{
  return [&cluster](const strategies::Collective& collective) {
    costmodel::CollectiveOp op = costmodel::CollectiveOp::all_reduce;
    if (collective.kind == TaskKind::reduce_scatter)
      op = costmodel::CollectiveOp::reduce_scatter;
    else if (collective.kind == TaskKind::all_gather)
      op = costmodel::CollectiveOp::all_gather;
    return costmodel::collective_seconds(cluster, collective.devices, op,
                                         static_cast<costmodel::Algorithm>(collective.algorithm), collective.bytes);
  };
}

} // namespace hetsim::sim
