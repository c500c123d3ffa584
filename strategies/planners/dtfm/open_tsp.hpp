#pragma once
/// Open-loop travelling salesman: the cheapest path that visits every node once, free to start and end anywhere
/// (the order of pipeline stages over the coarsened graph of data-parallel groups, eq. 4).

#include <span>
#include <vector>

namespace hetsim::strategies {

struct OpenPath {
  double cost = 0;
  std::vector<int> order; ///< nodes in path order
};

/// Exact Held-Karp dynamic programme up to this many nodes (2^16 x 16 states); a heuristic above.
inline constexpr int kHeldKarpMaxNodes = 16;

/// `weight` is an n x n row-major symmetric matrix, n >= 1. Exact up to kHeldKarpMaxNodes nodes, otherwise
/// open_tsp_heuristic. Ties go to the lexicographically first path, so the result is deterministic.
OpenPath open_tsp(std::span<const double> weight, int n);

/// Held-Karp over subsets; O(2^n n^2).
OpenPath open_tsp_exact(std::span<const double> weight, int n);

/// Nearest-neighbour paths from the first `starts` nodes (all when 0), each improved by 2-opt segment reversals
/// and Or-opt moves until no move helps; the best one. O(n^2) per start and pass.
OpenPath open_tsp_heuristic(std::span<const double> weight, int n, int starts = 0);

/// Sum of the edges along `order`.
double path_cost(std::span<const double> weight, int n, std::span<const int> order);

} // namespace hetsim::strategies
