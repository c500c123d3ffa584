#pragma once
/// α-β estimates of collectives and point-to-point transfers on an idle network (no contention).
/// They are the closed-form twin of the simulator's flow-level collectives and use the same decompositions.

#include "core/cluster.hpp"

#include <utility>
#include <vector>

namespace hetsim::costmodel {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather };
/// Same order as strategies::CollectiveAlgorithm.
enum class Algorithm { ring, tree, hierarchical };

/// One transfer of `bytes` from src to dst: latency plus size over the path's bottleneck bandwidth.
double transfer_seconds(const Cluster& cluster, int src, int dst, double bytes);

/// Several transfers of `bytes` each that start together (e.g. every replica crossing the same pipeline
/// boundary): the time of the slowest, with each NIC shared by the transfers of its node and each WAN link by
/// the transfers between its two regions (unless the cluster's WAN sharing is per flow).
double concurrent_transfers_seconds(const Cluster& cluster, const std::vector<std::pair<int, int>>& transfers,
                                    double bytes);

/// Ring over `devices` in the given order: 2(n-1) steps for all-reduce, n-1 for the others, each step
/// moving bytes/n per member and bounded by the slowest ring edge.
double ring_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes);

/// Binary tree (reduce to the root, broadcast back) pipelined in `chunks` pieces.
double tree_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                    int chunks);

/// Intra-node ring reduce-scatter, inter-node ring all-reduce among same local-rank peers, intra-node ring
/// all-gather (or the matching halves for reduce-scatter/all-gather).
double hierarchical_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes);

double collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                          Algorithm algorithm, double bytes);

/// Pieces a tree collective is pipelined in, shared with the simulator.
inline constexpr int kTreeChunks = 8;

} // namespace hetsim::costmodel
