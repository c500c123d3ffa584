#pragma once
/// A part of a cluster: some of its nodes, with the links among them, as a cluster of its own.
///
/// Jobs that share a cluster (sim/simulate/shared_jobs.hpp) each get a part: a job's plan places its ranks on the
/// part's devices, and the part's device i is device `devices[i]` of the whole cluster. A part keeps everything
/// its nodes meet on the whole cluster: their ports and NICs, the switch latency of each region it keeps, the WAN
/// links between those regions, the node-pair overrides among its nodes and the WAN sharing, so that a job
/// replayed alone on its part takes the time it takes alone on the whole cluster.

#include "core/cluster.hpp"

#include <string>
#include <vector>

namespace hetsim {

struct ClusterPart {
  Cluster cluster;
  std::vector<int> devices; ///< the part's device i is the whole cluster's device devices[i]
  std::vector<int> nodes;   ///< the whole cluster's nodes it holds, ascending
};

/// The part of `cluster` made of `nodes` (indices into cluster.nodes(); any order, no repeats; not empty), named
/// `name`. Devices are numbered node by node in the whole cluster's node order.
ClusterPart cluster_part(const Cluster& cluster, std::vector<int> nodes, const std::string& name);

} // namespace hetsim
