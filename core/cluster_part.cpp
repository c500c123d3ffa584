#include "core/cluster_part.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim {

ClusterPart cluster_part(const Cluster& cluster, std::vector<int> nodes, const std::string& name)
{
  std::sort(nodes.begin(), nodes.end());
  HETSIM_ASSERT(!nodes.empty() && std::adjacent_find(nodes.begin(), nodes.end()) == nodes.end());
  HETSIM_ASSERT(nodes.front() >= 0 && nodes.back() < static_cast<int>(cluster.nodes().size()));

  ClusterPart part{Cluster(name), {}, nodes};
  Cluster& out = part.cluster;
  out.set_wan_sharing(cluster.wan_sharing());
  std::vector<int> region_in_part(cluster.regions().size(), -1);
  std::vector<int> node_in_part(cluster.nodes().size(), -1);
  for (int node : nodes) {
    const Node& n = cluster.nodes()[node];
    int& region   = region_in_part[n.region];
    if (region < 0)
      region = out.add_region(cluster.regions()[n.region].name, cluster.regions()[n.region].latency_s);
    node_in_part[node] = out.add_node_like(region, n, n.intra, n.nic);
    for (int device : n.devices) {
      const Device& d = cluster.device(device);
      out.add_device(node_in_part[node], out.add_gpu(cluster.gpus()[d.gpu]), d.gpu_origin);
      part.devices.push_back(device);
    }
  }
  for (std::size_t a = 0; a < region_in_part.size(); ++a)
    for (std::size_t b = 0; b < region_in_part.size(); ++b)
      if (a != b && region_in_part[a] >= 0 && region_in_part[b] >= 0)
        out.set_inter_region(region_in_part[a], region_in_part[b],
                             cluster.inter_region(static_cast<int>(a), static_cast<int>(b)));
  for (NodePairOverride pair : cluster.overrides())
    if (node_in_part[pair.src_node] >= 0 && node_in_part[pair.dst_node] >= 0) {
      pair.src_node = node_in_part[pair.src_node];
      pair.dst_node = node_in_part[pair.dst_node];
      out.add_override(pair);
    }
  return part;
}

} // namespace hetsim
