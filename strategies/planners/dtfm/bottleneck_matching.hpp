#pragma once
/// Bottleneck perfect matching between two equal-sized device groups (eq. 3 of the decentralized-training
/// scheduler): the perfect matching whose most expensive pair is cheapest. Polynomial: a threshold search over
/// the sorted pair costs, each threshold tested for a perfect matching in the graph of the cheaper pairs.

#include <span>
#include <vector>

namespace hetsim::strategies {

struct BottleneckMatching {
  double bottleneck = 0;  ///< cost of the most expensive matched pair
  std::vector<int> match; ///< row -> column
};

/// `cost` is an n x n row-major matrix (rows: one group, columns: the other); n >= 1. Groups of at most 64 use a
/// bit-parallel augmenting-path test, larger ones Boost.Graph's maximum cardinality matching.
BottleneckMatching bottleneck_matching(std::span<const double> cost, int n);

/// Whether the bipartite graph {(r, c) : cost[r * n + c] <= threshold} has a perfect matching, with Boost.Graph
/// whatever n is (the reference the fast path is tested against); fills `match` (row -> column) when it has.
bool has_perfect_matching_boost(std::span<const double> cost, int n, double threshold, std::vector<int>& match);

} // namespace hetsim::strategies
