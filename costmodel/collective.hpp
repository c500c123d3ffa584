#pragma once
/// α-β estimates of collectives and point-to-point transfers on an idle network (no contention).
/// They are the closed-form twin of the simulator's flow-level collectives and use the same decompositions.

#include "core/cluster.hpp"
#include "costmodel/nccl_tuning.hpp"

#include <utility>
#include <vector>

namespace hetsim::costmodel {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, all_to_all };
/// Same order as strategies::CollectiveAlgorithm. `nccl`: NCCL's own choice and time (nccl_collective.hpp).
enum class Algorithm { ring, tree, hierarchical, nccl };

/// NCCL's own latency beside the wire's, from its tuning model (src/graph/tuning.cc, ring with the Simple
/// protocol that large messages use): a base cost per call, and per ring step over NVLink/PCIe inside a node or
/// over the network between nodes. A step takes the larger of this and its wire latency.
inline constexpr double kCallLatency            = 8.4e-6;
inline constexpr double kIntraNodeStepLatency   = 5.7e-6;
inline constexpr double kNetworkStepLatency     = 6.6e-6;

/// Latency of one ring step over a wire of `wire_latency_s`, inside a node or between nodes.
double ring_step_latency(double wire_latency_s, bool same_node);

/// Ring steps of `op` over n members: 2(n-1) for all-reduce, n-1 for the others.
int ring_steps(CollectiveOp op, int n);

/// What a collective that the library runs as `calls` calls over `devices` costs beyond moving its bytes once
/// (which collective_seconds and the simulator's flows price): every call's base latency, and the ring steps'
/// latency of every call after the first. ZeRO-3 under DeepSpeed gathers a layer tensor by tensor: at a
/// thousand ranks, a thousand steps per call make this most of its communication. Under `Algorithm::nccl`,
/// `calls` calls of 1/calls of `bytes` each against one call of all of them, as NCCL prices each
/// (nccl_collective_seconds: each call its own latency and its own pipeline to fill).
double library_latency_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, int calls,
                               Algorithm algorithm = Algorithm::ring, const NcclEnvironment& nccl = {},
                               double bytes = 0);

/// One transfer of `bytes` from src to dst: latency plus size over the path's bottleneck bandwidth.
double transfer_seconds(const Cluster& cluster, int src, int dst, double bytes);

/// One transfer in a set that starts together.
struct Flow {
  int src      = 0;
  int dst      = 0;
  double bytes = 0;
};

/// Seconds each of `flows` takes when all start together: a node's NIC out and in, and each WAN link (unless the
/// cluster's WAN sharing is per flow), are shared fairly by the flows that cross them, and a flow ends once each
/// of its links has carried its bytes and as much of every other flow (or all of a smaller one). Alike flows
/// (every replica crossing one pipeline boundary) take n times as long as one alone.
std::vector<double> shared_flow_seconds(const Cluster& cluster, const std::vector<Flow>& flows);

/// Several transfers of `bytes` each that start together: the time of the slowest (shared_flow_seconds).
double concurrent_transfers_seconds(const Cluster& cluster, const std::vector<std::pair<int, int>>& transfers,
                                    double bytes);

/// Ring over `devices` in the given order: ring_steps steps, each moving bytes/n per member and bounded by the
/// slowest ring edge (its bandwidth, and its step latency).
double ring_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes);

/// Binary tree (reduce to the root, broadcast back) pipelined in `chunks` pieces.
double tree_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                    int chunks);

/// Intra-node ring reduce-scatter, inter-node ring all-reduce among same local-rank peers, intra-node ring
/// all-gather (or the matching halves for reduce-scatter/all-gather).
double hierarchical_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes);

/// Every member sends bytes/n to every other at once: the slowest of those flows sharing NICs and WAN links
/// (shared_flow_seconds), and never faster than a member's own port carries its n-1 shares.
double all_to_all_seconds(const Cluster& cluster, const std::vector<int>& devices, double bytes);
/// `op` over `devices` by `algorithm` (an all-to-all has one way, all_to_all_seconds); `nccl` is the
/// environment NCCL's choice is made under (Algorithm::nccl only).
double collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                          Algorithm algorithm, double bytes, const NcclEnvironment& nccl = {});

/// Pieces a tree collective is pipelined in, shared with the simulator.
inline constexpr int kTreeChunks = 8;

} // namespace hetsim::costmodel
