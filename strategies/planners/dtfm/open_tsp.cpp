#include "strategies/planners/dtfm/open_tsp.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hetsim::strategies {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Improves an open path in place with 2-opt (reverse a segment; free endpoints make reversing a prefix or a
/// suffix a valid move) and Or-opt (move one node elsewhere), first improvement, each move priced in O(1).
void improve(std::span<const double> w, int n, std::vector<int>& p)
{
  auto at = [&](int a, int b) { return w[p[a] * n + p[b]]; };
  constexpr double kEps = 1e-12;
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < n - 1; ++i)
      for (int j = i + 1; j < n; ++j) {
        // Reverse p[i..j]: edges (i-1,i) and (j,j+1) become (i-1,j) and (i,j+1).
        const double before = (i > 0 ? at(i - 1, i) : 0) + (j < n - 1 ? at(j, j + 1) : 0);
        const double after  = (i > 0 ? at(i - 1, j) : 0) + (j < n - 1 ? at(i, j + 1) : 0);
        if (after < before - kEps) {
          std::reverse(p.begin() + i, p.begin() + j + 1);
          changed = true;
        }
      }
    for (int i = 0; i < n; ++i) {
      // Take p[i] out: its two edges go, the bridge over it comes.
      const int node      = p[i];
      const double out    = (i > 0 ? at(i - 1, i) : 0) + (i < n - 1 ? at(i, i + 1) : 0) -
                            (i > 0 && i < n - 1 ? at(i - 1, i + 1) : 0);
      int best_slot       = -1;
      double best_gain    = kEps;
      // Slot k of the remaining path (0 .. n-1): before its k-th node; neighbours are rest[k-1] and rest[k].
      auto rest = [&](int k) { return p[k < i ? k : k + 1]; };
      for (int k = 0; k <= n - 1; ++k) {
        if (k == i)
          continue; // where it was
        const double in = (k > 0 ? w[rest(k - 1) * n + node] : 0) + (k < n - 1 ? w[node * n + rest(k)] : 0) -
                          (k > 0 && k < n - 1 ? w[rest(k - 1) * n + rest(k)] : 0);
        if (out - in > best_gain) {
          best_gain = out - in;
          best_slot = k;
        }
      }
      if (best_slot >= 0) {
        p.erase(p.begin() + i);
        p.insert(p.begin() + best_slot, node);
        changed = true;
      }
    }
  }
}

} // namespace

double path_cost(std::span<const double> weight, int n, std::span<const int> order)
{
  double cost = 0;
  for (std::size_t k = 1; k < order.size(); ++k)
    cost += weight[order[k - 1] * n + order[k]];
  return cost;
}

OpenPath open_tsp_exact(std::span<const double> weight, int n)
{
  HETSIM_ASSERT(n >= 1 && n <= 24);
  const std::uint32_t full = (std::uint32_t{1} << n) - 1;
  // best[mask * n + last]: cheapest path over `mask` ending at `last`.
  // Reused across calls: the scheduler's inner loop solves thousands of small instances.
  thread_local std::vector<double> best;
  best.assign(static_cast<std::size_t>(full + 1) * n, kInf);
  for (int v = 0; v < n; ++v)
    best[(std::size_t{1} << v) * n + v] = 0;
  // Only (last in mask, next outside it) pairs are states and moves: iterate over their bits.
  for (std::uint32_t mask = 1; mask < full; ++mask)
    for (std::uint32_t lasts = mask; lasts; lasts &= lasts - 1) {
      const int last      = std::countr_zero(lasts);
      const double here   = best[static_cast<std::size_t>(mask) * n + last];
      const double* edges = &weight[last * n];
      for (std::uint32_t nexts = full & ~mask; nexts; nexts &= nexts - 1) {
        const int next = std::countr_zero(nexts);
        double& slot   = best[static_cast<std::size_t>(mask | (std::uint32_t{1} << next)) * n + next];
        slot           = std::min(slot, here + edges[next]);
      }
    }
  OpenPath path;
  path.cost = kInf;
  int last  = 0;
  for (int v = 0; v < n; ++v)
    if (best[static_cast<std::size_t>(full) * n + v] < path.cost) {
      path.cost = best[static_cast<std::size_t>(full) * n + v];
      last      = v;
    }
  // Walk back: the predecessor is any node whose subpath cost plus the edge reproduces this one.
  std::uint32_t mask = full;
  path.order.assign(n, 0);
  for (int pos = n - 1; pos >= 0; --pos) {
    path.order[pos]        = last;
    const double here      = best[static_cast<std::size_t>(mask) * n + last];
    const std::uint32_t up = mask & ~(std::uint32_t{1} << last);
    if (up == 0)
      break;
    int prev      = -1;
    double chosen = kInf;
    for (int v = 0; v < n; ++v)
      if (up & (std::uint32_t{1} << v)) {
        const double through = best[static_cast<std::size_t>(up) * n + v] + weight[v * n + last];
        if (std::abs(through - here) < chosen) {
          chosen = std::abs(through - here);
          prev   = v;
        }
      }
    mask = up;
    last = prev;
  }
  path.cost = path_cost(weight, n, path.order);
  return path;
}

OpenPath open_tsp_heuristic(std::span<const double> weight, int n, int starts)
{
  const int last_start = starts > 0 ? std::min(starts, n) : n;
  HETSIM_ASSERT(n >= 1);
  OpenPath best;
  best.cost = kInf;
  for (int start = 0; start < last_start; ++start) {
    std::vector<int> p{start};
    std::vector<char> used(n, 0);
    used[start] = 1;
    while (static_cast<int>(p.size()) < n) {
      int next = -1;
      for (int v = 0; v < n; ++v)
        if (!used[v] && (next < 0 || weight[p.back() * n + v] < weight[p.back() * n + next]))
          next = v;
      used[next] = 1;
      p.push_back(next);
    }
    improve(weight, n, p);
    const double cost = path_cost(weight, n, p);
    if (cost < best.cost) {
      best.cost  = cost;
      best.order = std::move(p);
    }
  }
  return best;
}

OpenPath open_tsp(std::span<const double> weight, int n)
{
  return n <= kHeldKarpMaxNodes ? open_tsp_exact(weight, n) : open_tsp_heuristic(weight, n);
}

} // namespace hetsim::strategies
