#include "strategies/lowering/band.hpp"

#include "costmodel/attention_speed.hpp"
#include "core/units.hpp"
#include "costmodel/kernel_time.hpp"

#include <algorithm>
#include <map>
#include <set>

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

/// How much longer and shorter the communication over each socket NIC of `nodes` could be than at the public
/// runs' median rate, at their slowest and fastest (core/cluster.hpp): bounded by its line rate, and by the
/// fastest NIC it could exchange with (a 10 Gb/s peer carries 10 whatever sockets move). NICs whose rate was
/// measured (the file's, a calibration's) add nothing.
void widen_for_sockets(const Cluster& cluster, const std::set<int>& nodes, costmodel::BandNetwork& network)
{
  for (const int id : nodes) {
    const Node& node = cluster.nodes()[id];
    if (node.transport != NicTransport::socket || node.socket_rate_measured || node.nic_nominal_bytes_per_s <= 0)
      continue;
    double peer = 0, peer_now = 0; // the fastest other NIC: its line rate (if socket, unmeasured) and its rate now
    for (const int other : nodes)
      if (other != id) {
        const Node& o = cluster.nodes()[other];
        peer_now      = std::max(peer_now, o.nic.bandwidth_bytes_per_s);
        peer = std::max(peer, o.socket_rate_measured || o.nic_nominal_bytes_per_s <= 0 ? o.nic.bandwidth_bytes_per_s
                                                                                       : o.nic_nominal_bytes_per_s);
      }
    const double line    = node.nic_nominal_bytes_per_s;
    const double now     = std::min(node.nic.bandwidth_bytes_per_s, peer_now);
    const double slowest = std::min({line, kSocketTransportLowestGbps * units::kGbps, peer});
    const double fastest = std::min({line, kSocketTransportHighestGbps * units::kGbps, peer});
    if (now <= 0 || slowest <= 0)
      continue;
    network.socket_slower = std::max(network.socket_slower, now / slowest - 1);
    network.socket_faster = std::max(network.socket_faster, 1 - now / fastest);
  }
}

} // namespace

costmodel::PredictionBand plan_band(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute,
                                    double iteration_s, double exposed_comm_share)
{
  const Cluster& cluster = *problem.cluster;
  std::map<std::string, costmodel::BandDevice> by_gpu;
  costmodel::BandNetwork network;
  std::set<int> nodes;
  for (const int device : plan.placement)
    nodes.insert(cluster.device(device).node);
  network.multi_node = nodes.size() > 1;
  widen_for_sockets(cluster, nodes, network);
  for (const int device : plan.placement) {
    const GpuSpec& gpu = cluster.gpu_of(device);
    if (by_gpu.count(gpu.name))
      continue;
    costmodel::BandDevice entry;
    entry.gpu          = &gpu;
    entry.fp8_products = plan.framework.fp8 != models::Fp8Recipe::none;
    entry.unmeasured_attention_share =
        unmeasured_attention_share(gpu, *problem.workload, plan, compute, entry.attention_kernel);
    by_gpu.emplace(gpu.name, entry);
  }
  std::vector<costmodel::BandDevice> devices;
  for (const auto& [name, entry] : by_gpu)
    devices.push_back(entry);
  network.socket_exposed_share = exposed_comm_share;
  return costmodel::prediction_band(iteration_s, devices, network, compute.calibration(),
                                    plan.framework.pytorch);
}

} // namespace hetsim::strategies
