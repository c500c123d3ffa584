#pragma once
/// Where each virtual rank of a plan runs, in the terms a launcher speaks: the nodes in hostfile order, and on
/// each node the GPU and the virtual rank of every local process. torchrun numbers a node's processes
/// node_rank × nproc + local_rank; a plan's placement (dtfm's device permutation, a pipeline laid across nodes)
/// need not, so the launch scripts set each process's RANK and GPU from this map.

#include "core/cluster.hpp"
#include "strategies/plan/plan.hpp"

#include <string>
#include <vector>

namespace hetsim::launch {

/// The processes of one node, by local rank: local rank l runs virtual rank `ranks[l]` on GPU `gpus[l]` (its
/// index on the node, as in CUDA_VISIBLE_DEVICES).
struct NodeProcesses {
  std::string host; ///< the cluster's node name
  int node = 0;     ///< index into Cluster::nodes()
  std::vector<int> ranks;
  std::vector<int> gpus;
};

struct RankMap {
  /// Nodes that run a rank, in hostfile order: by their lowest virtual rank, so rank 0's node is node rank 0
  /// (the master).
  std::vector<NodeProcesses> nodes;
  int world_size = 0;
};

/// The map of `plan` (whose placement is a bijection onto the cluster's devices, as plan files are checked).
RankMap make_rank_map(const Cluster& cluster, const strategies::Plan& plan);

} // namespace hetsim::launch
