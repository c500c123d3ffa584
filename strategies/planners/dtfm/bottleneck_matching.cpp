#include "strategies/planners/dtfm/bottleneck_matching.hpp"

#include "core/error.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/max_cardinality_matching.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace hetsim::strategies {
namespace {

/// Kuhn's augmenting paths with rows' admissible columns as 64-bit masks: a group of 64 costs a few thousand
/// word operations per threshold, far below what a general graph matcher allocates. Fixed arrays: the scheduler
/// calls this thousands of times per second.
class BitMatcher {
public:
  explicit BitMatcher(int n) : n_(n) {}

  bool perfect(std::span<const double> cost, double threshold)
  {
    for (int r = 0; r < n_; ++r) {
      std::uint64_t mask = 0;
      for (int c = 0; c < n_; ++c)
        if (cost[r * n_ + c] <= threshold)
          mask |= std::uint64_t{1} << c;
      if (mask == 0)
        return false;
      adjacency_[r] = mask;
    }
    std::fill_n(row_of_.begin(), n_, -1);
    std::fill_n(col_of_.begin(), n_, -1);
    // Greedy start: most rows match without any augmenting path.
    std::uint64_t free_cols = n_ == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n_) - 1;
    for (int r = 0; r < n_; ++r)
      if (std::uint64_t avail = adjacency_[r] & free_cols) {
        const int c = std::countr_zero(avail);
        col_of_[r]  = c;
        row_of_[c]  = r;
        free_cols &= ~(std::uint64_t{1} << c);
      }
    for (int r = 0; r < n_; ++r) {
      if (col_of_[r] >= 0)
        continue;
      visited_ = 0;
      if (!augment(r))
        return false;
    }
    return true;
  }

  std::vector<int> match() const { return std::vector<int>(col_of_.begin(), col_of_.begin() + n_); }

private:
  bool augment(int r)
  {
    std::uint64_t candidates = adjacency_[r] & ~visited_;
    while (candidates) {
      const int c = std::countr_zero(candidates);
      candidates &= candidates - 1;
      if (visited_ & (std::uint64_t{1} << c))
        continue;
      visited_ |= std::uint64_t{1} << c;
      if (row_of_[c] < 0 || augment(row_of_[c])) {
        row_of_[c] = r;
        col_of_[r] = c;
        return true;
      }
    }
    return false;
  }

  int n_;
  // Filled before use: no zeroing on every call.
  std::array<std::uint64_t, 64> adjacency_;
  std::array<int, 64> row_of_, col_of_;
  std::uint64_t visited_ = 0;
};

} // namespace

bool has_perfect_matching_boost(std::span<const double> cost, int n, double threshold, std::vector<int>& match)
{
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph graph(2 * n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      if (cost[r * n + c] <= threshold)
        boost::add_edge(r, n + c, graph);
  std::vector<boost::graph_traits<Graph>::vertex_descriptor> mate(2 * n);
  boost::edmonds_maximum_cardinality_matching(graph, &mate[0]);
  if (static_cast<int>(boost::matching_size(graph, &mate[0])) != n)
    return false;
  match.assign(n, -1);
  for (int r = 0; r < n; ++r)
    match[r] = static_cast<int>(mate[r]) - n;
  return true;
}

BottleneckMatching bottleneck_matching(std::span<const double> cost, int n)
{
  HETSIM_ASSERT(n >= 1 && static_cast<int>(cost.size()) == n * n);
  // No matching beats the dearest row's cheapest pair or the dearest column's cheapest pair.
  double lower = 0;
  for (int r = 0; r < n; ++r)
    lower = std::max(lower, *std::min_element(cost.begin() + r * n, cost.begin() + (r + 1) * n));
  for (int c = 0; c < n; ++c) {
    double cheapest = cost[c];
    for (int r = 1; r < n; ++r)
      cheapest = std::min(cheapest, cost[r * n + c]);
    lower = std::max(lower, cheapest);
  }
  BitMatcher bits(n <= 64 ? n : 0);
  std::vector<int> boost_match;
  auto perfect = [&](double threshold) {
    return n <= 64 ? bits.perfect(cost, threshold) : has_perfect_matching_boost(cost, n, threshold, boost_match);
  };
  // The lower bound is the answer most of the time: test it before sorting anything.
  double answer = lower;
  if (!perfect(lower)) {
    thread_local std::vector<double> thresholds; // reused: this runs thousands of times per search
    thresholds.clear();
    for (double w : cost)
      if (w > lower)
        thresholds.push_back(w);
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    // The largest threshold admits every pair, so the search always ends on a perfect one.
    std::size_t lo = 0, hi = thresholds.size() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (perfect(thresholds[mid]))
        hi = mid;
      else
        lo = mid + 1;
    }
    answer = thresholds[lo];
    perfect(answer); // the last test may have been another threshold: leave this one's matching
  }
  BottleneckMatching result;
  result.bottleneck = answer;
  result.match = n <= 64 ? bits.match() : boost_match;
  return result;
}

} // namespace hetsim::strategies
