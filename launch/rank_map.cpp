#include "launch/rank_map.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <map>

namespace hetsim::launch {

RankMap make_rank_map(const Cluster& cluster, const strategies::Plan& plan)
{
  HETSIM_ASSERT(static_cast<int>(plan.placement.size()) == plan.world_size());
  RankMap map;
  map.world_size = plan.world_size();
  std::map<int, int> slot_of_node;                       // cluster node -> index into map.nodes
  for (int rank = 0; rank < plan.world_size(); ++rank) { // ascending ranks: nodes appear by their lowest rank
    const Device& device = cluster.device(plan.placement[rank]);
    auto [slot, added]   = slot_of_node.try_emplace(device.node, static_cast<int>(map.nodes.size()));
    if (added)
      map.nodes.push_back({cluster.nodes()[device.node].name, device.node, {}, {}});
    NodeProcesses& node = map.nodes[slot->second];
    node.ranks.push_back(rank);
    node.gpus.push_back(device.local_rank);
  }
  return map;
}

} // namespace hetsim::launch
