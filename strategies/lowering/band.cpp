#include "strategies/lowering/band.hpp"

#include "costmodel/attention_speed.hpp"
#include "costmodel/kernel_time.hpp"

#include <map>

namespace hetsim::strategies {
namespace {

/// Of one transformer block's forward and backward on `gpu`, the share of time in attention kernels whose
/// speed there is unmeasured; 0 when the model has none or they are measured (or fitted by a calibration).
double unmeasured_attention_share(const GpuSpec& gpu, const models::Workload& workload, const Plan& plan,
                                  const costmodel::ComputeModel& compute, std::string& kernel_name)
{
  const costmodel::KernelConstants c = compute.constants(gpu);
  if (costmodel::attention_fitted(c))
    return 0;
  const double samples = plan.micro_batch.empty() ? 1.0 : static_cast<double>(plan.micro_batch.front());
  for (const models::Layer& layer : workload.layers) {
    double all = 0, attention = 0;
    bool unmeasured = false;
    for (const models::Operator& op : layer.operators)
      for (const bool backward : {false, true})
        for (const models::Kernel& kernel : models::operator_kernels(op, plan.tp, samples, backward)) {
          const double seconds = costmodel::kernel_seconds(gpu, c, kernel, plan.dtype);
          all += seconds;
          if (kernel.kind != models::Kernel::Kind::fused_attention)
            continue;
          const auto run = costmodel::attention_run(kernel.attention, gpu, kernel.explicit_mask);
          kernel_name    = std::string(models::attention_kernel_name(run.kernel));
          unmeasured     = !costmodel::attention_speed(run.kernel, gpu).measured;
          attention += seconds;
        }
    if (attention > 0)
      return unmeasured && all > 0 ? attention / all : 0;
  }
  return 0;
}

} // namespace

costmodel::PredictionBand plan_band(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute,
                                    double iteration_s, double exposed_comm_share)
{
  const Cluster& cluster = *problem.cluster;
  std::map<std::string, costmodel::BandDevice> by_gpu;
  costmodel::BandNetwork network;
  bool sockets = false;
  const int first_node = plan.placement.empty() ? 0 : cluster.device(plan.placement.front()).node;
  for (const int device : plan.placement) {
    network.multi_node = network.multi_node || cluster.device(device).node != first_node;
    sockets = sockets || cluster.node_of(device).transport == NicTransport::socket;
    const GpuSpec& gpu = cluster.gpu_of(device);
    if (by_gpu.count(gpu.name))
      continue;
    costmodel::BandDevice entry;
    entry.gpu = &gpu;
    entry.unmeasured_attention_share =
        unmeasured_attention_share(gpu, *problem.workload, plan, compute, entry.attention_kernel);
    by_gpu.emplace(gpu.name, entry);
  }
  std::vector<costmodel::BandDevice> devices;
  for (const auto& [name, entry] : by_gpu)
    devices.push_back(entry);
  if (sockets)
    network.socket_exposed_share = exposed_comm_share;
  return costmodel::prediction_band(iteration_s, devices, network, compute.calibration(),
                                    plan.framework.pytorch);
}

} // namespace hetsim::strategies
