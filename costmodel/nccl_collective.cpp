#include "costmodel/nccl_collective.hpp"

#include "core/error.hpp"
#include "core/gpu_family.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace hetsim::costmodel {
namespace {

constexpr double kPcieCredit     = 24.0 / 31.5;     // PCIe 4.0 x16: NCCL's 24 GB/s of its nominal 31.5
constexpr double kLargestNicGbps = 400;             // NICs of at most 400 Gb/s each

/// NCCL's NVLink bandwidth per link over the link's nominal (src/graph/topo.h:20-24).
double nvlink_credit(int compute_capability)
{
  if (compute_capability >= 100)
    return 40.1 / 50.0;
  if (compute_capability >= 90)
    return 20.6 / 25.0;
  return 20.0 / 25.0;
}

IntraFabric fabric_of(const Cluster& cluster, const Node& node)
{
  if (node.fabric != IntraFabric::unstated)
    return node.fabric;
  // SXM boards, and the catalog's GPUs sold only on them (HGX/DGX B200 and B300, GB200 and GB300 NVL racks, the
  // H20's HGX board), meet in NVSwitches; AMD's OAM GPUs on their boards' xGMI mesh, links without a switch.
  const GpuSpec& gpu = cluster.gpu_of(node.devices.front());
  if (gpu.name.find("SXM") != std::string::npos || datacenter_blackwell(gpu) || gpu.name == "H20")
    return IntraFabric::nvswitch;
  if (gpu.name.starts_with("MI250X") || instinct_cdna3_or_later(gpu))
    return IntraFabric::nvlink;
  return IntraFabric::pcie;
}

NcclFunction function_of(CollectiveOp op)
{
  switch (op) {
    case CollectiveOp::all_reduce: return NcclFunction::all_reduce;
    case CollectiveOp::reduce_scatter: return NcclFunction::reduce_scatter;
    case CollectiveOp::all_gather: return NcclFunction::all_gather;
    case CollectiveOp::all_to_all: break;
  }
  throw InternalError("nccl_collective: an all-to-all is grouped sends and receives, not a tuned collective");
}

/// `choice`'s time over `devices` at the rate NCCL's pipeline reaches.
double achieved_seconds(const Cluster& cluster, const std::vector<int>& devices, const NcclChoice& choice,
                        double bytes, const NcclEnvironment& environment)
{
  return nccl_achieved_seconds(choice, bytes, static_cast<int>(devices.size()), nccl_transport_of(cluster, devices),
                               static_cast<double>(environment.buffer_bytes));
}

} // namespace

NcclTopology nccl_topology_of(const Cluster& cluster, const std::vector<int>& devices)
{
  NcclTopology t;
  t.ranks = static_cast<int>(devices.size());
  std::set<int> nodes;
  int low = 1000, high = 0;
  for (int d : devices) {
    nodes.insert(cluster.device(d).node);
    const int cc = cluster.gpu_of(d).compute_capability > 0 ? cluster.gpu_of(d).compute_capability : 70;
    low          = std::min(low, cc);
    high         = std::max(high, cc);
  }
  t.compute_capability     = low;
  t.max_compute_capability = high;
  t.nodes                  = static_cast<int>(nodes.size());
  t.nvswitch               = true;
  t.intra_bw_GBps          = std::numeric_limits<double>::infinity();
  t.nic_bw_GBps            = std::numeric_limits<double>::infinity();
  t.nics                   = 1 << 20;
  for (int id : nodes) {
    const Node& node         = cluster.nodes()[id];
    const IntraFabric fabric = fabric_of(cluster, node);
    const double nominal     = node.intra.bandwidth_bytes_per_s / units::kGBps;
    if (fabric == IntraFabric::pcie)
      t.intra = NcclIntraLink::pci;
    t.nvswitch = t.nvswitch && fabric == IntraFabric::nvswitch;
    t.intra_bw_GBps =
        std::min(t.intra_bw_GBps, nominal * (fabric == IntraFabric::pcie ? kPcieCredit : nvlink_credit(low)));
    const double gbps = node.nic.bandwidth_bytes_per_s / units::kGbps;
    const int nics    = static_cast<int>(std::clamp(std::ceil(gbps / kLargestNicGbps - 1e-9), 1.0, 1024.0));
    t.nics            = std::min(t.nics, nics);
    t.nic_bw_GBps     = std::min(t.nic_bw_GBps, gbps / nics / 8);
  }
  if (t.intra == NcclIntraLink::pci)
    t.nvswitch = false;
  return nccl_topology(t);
}

NcclChoice nccl_collective(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                           const NcclEnvironment& environment)
{
  return nccl_choose(nccl_topology_of(cluster, devices), function_of(op), bytes, environment);
}

NcclTransport nccl_transport_of(const Cluster& cluster, const std::vector<int>& devices)
{
  std::set<int> nodes;
  for (int d : devices)
    nodes.insert(cluster.device(d).node);
  if (nodes.size() <= 1)
    return NcclTransport::nvlink;
  // The transport whose pipeline loses most, where the nodes differ: EFA, then sockets, then IB verbs.
  NcclTransport slowest = NcclTransport::infiniband;
  for (int id : nodes) {
    const NicTransport transport = cluster.nodes()[id].transport;
    if (transport == NicTransport::efa)
      slowest = NcclTransport::efa;
    else if (transport == NicTransport::socket && slowest != NcclTransport::efa)
      slowest = NcclTransport::socket;
  }
  return slowest;
}

double nccl_pipeline_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                             const NcclEnvironment& environment)
{
  const NcclChoice choice = nccl_collective(cluster, devices, op, bytes, environment);
  return achieved_seconds(cluster, devices, choice, bytes, environment) - choice.seconds;
}

double nccl_collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                               double bytes, const NcclEnvironment& environment)
{
  return achieved_seconds(cluster, devices, nccl_collective(cluster, devices, op, bytes, environment), bytes,
                          environment);
}

} // namespace hetsim::costmodel
