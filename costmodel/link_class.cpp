#include "costmodel/link_class.hpp"

#include <algorithm>

namespace hetsim::costmodel {
namespace {

int remoteness(std::string_view name)
{
  return name == kIntraNode ? 0 : name == kInterNode ? 1 : 2;
}

} // namespace

std::string_view link_class(const Cluster& cluster, int a, int b)
{
  if (cluster.device(a).node == cluster.device(b).node)
    return kIntraNode;
  return cluster.region_of(a) == cluster.region_of(b) ? kInterNode : kInterRegion;
}

std::string_view ring_link_class(const Cluster& cluster, const std::vector<int>& devices)
{
  std::string_view worst = kIntraNode;
  for (std::size_t i = 0; i < devices.size() && devices.size() > 1; ++i) {
    const std::string_view c = link_class(cluster, devices[i], devices[(i + 1) % devices.size()]);
    if (remoteness(c) > remoteness(worst))
      worst = c;
  }
  return worst;
}

double collective_overhead_seconds(const Cluster& cluster, const Calibration& calibration,
                                   const std::vector<int>& devices)
{
  const auto it = calibration.links.find(std::string(ring_link_class(cluster, devices)));
  return it == calibration.links.end() ? 0.0 : it->second.collective_overhead_s;
}

Cluster calibrated_cluster(const Cluster& cluster, const Calibration& calibration)
{
  auto find = [&](std::string_view name) -> const LinkCalibration* {
    auto it = calibration.links.find(std::string(name));
    return it == calibration.links.end() ? nullptr : &it->second;
  };
  const LinkCalibration* intra  = find(kIntraNode);
  const LinkCalibration* inter  = find(kInterNode);
  const LinkCalibration* region = find(kInterRegion);

  // Rebuild rather than mutate: Cluster exposes construction only through its add_* calls.
  Cluster out(cluster.name());
  for (const auto& gpu : cluster.gpus())
    out.add_gpu(gpu);
  for (const auto& r : cluster.regions())
    out.add_region(r.name, r.latency_s);
  double edge_latency_sum = 0; // a node's port plus NIC latency, averaged below for the WAN's share
  for (const auto& node : cluster.nodes()) {
    Link port = node.intra;
    Link nic  = node.nic;
    if (intra)
      port = Link{1 / intra->beta_seconds_per_byte, intra->alpha_s};
    if (inter) {
      nic.bandwidth_bytes_per_s = 1 / inter->beta_seconds_per_byte;
      // path latency between two nodes of a region = port + NIC + region switch (halves on each side).
      nic.latency_s = std::max(0.0, inter->alpha_s - port.latency_s - cluster.regions()[node.region].latency_s);
    }
    edge_latency_sum += port.latency_s + nic.latency_s;
    out.add_node_like(node.region, node, port, nic); // a calibrated NIC's rate is a measured one
  }
  for (const auto& device : cluster.devices()) // in id order, so that ids are kept
    out.add_device(device.node, device.gpu);
  const double edge_latency = cluster.nodes().empty() ? 0 : edge_latency_sum / cluster.nodes().size();
  const int regions         = static_cast<int>(cluster.regions().size());
  for (int a = 0; a < regions; ++a)
    for (int b = 0; b < regions; ++b) {
      if (a == b)
        continue;
      Link wan = cluster.inter_region(a, b);
      // The WAN cannot be faster than crossing either region's own switch (a Cluster invariant).
      const double floor_s = (cluster.regions()[a].latency_s + cluster.regions()[b].latency_s) / 2;
      if (region)
        wan = Link{1 / region->beta_seconds_per_byte, std::max(floor_s, region->alpha_s - edge_latency)};
      out.set_inter_region(a, b, wan);
    }
  for (const auto& o : cluster.overrides())
    out.add_override(o);
  out.set_wan_sharing(cluster.wan_sharing());
  return out;
}

} // namespace hetsim::costmodel
