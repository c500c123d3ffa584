#pragma once
/// The communication cost of a tasklet assignment in decentralized training (§3.2-3.3 of the DT-FM scheduler):
/// devices are split into `pp` data-parallel groups of `dp` devices each (one group per pipeline stage);
///  - data-parallel cost (eq. 2): each group's slowest member exchanging its gradient shards with every other
///    member, the slowest group bounding them all;
///  - pipeline cost (eq. 3-4): the open-loop TSP over the coarsened graph whose edge between two groups is the
///    bottleneck perfect matching of their members.

#include "core/cluster.hpp"
#include "strategies/planners/dtfm/open_tsp.hpp"

#include <span>
#include <vector>

namespace hetsim::strategies {

/// The symmetric communication graph G of §2: per device pair, the mean of both directions' latency and
/// bandwidth (every pair carries as much data each way, so only the mean matters to the scheduler).
struct CommGraph {
  int devices = 0;
  std::vector<double> latency_s;        ///< devices x devices, row-major
  std::vector<double> seconds_per_byte; ///< 1 / mean bandwidth; 0 on the diagonal
};

CommGraph comm_graph(const Cluster& cluster);

/// Bytes behind the two cost terms.
struct TaskletVolumes {
  double data_parallel_bytes = 0; ///< c_dp: one stage's gradient bytes, synchronised inside its group
  double pipeline_bytes      = 0; ///< c_pp: activation bytes one replica sends across a stage boundary per iteration
};

/// Flat assignment: group g (pipeline stage tasklets of one layer range) holds devices
/// members[g * dp .. (g + 1) * dp). Groups are unordered here; the pipeline order comes from the TSP.
using Assignment = std::vector<int>;

struct AssignmentCost {
  double data_parallel_s = 0;
  double pipeline_s      = 0;
  double total_s() const { return data_parallel_s + pipeline_s; }
};

class DtfmCost {
public:
  /// Searches price thousands of assignments: above this many stages their pipeline order comes from
  /// open_tsp_heuristic (Held-Karp on 16 stages costs ~10 ms per call); final answers use open_tsp.
  static constexpr int kExactSearchStages = 10;
  static constexpr int kSearchTspStarts   = 3; ///< nearest-neighbour starts of that heuristic inside searches

  DtfmCost(const CommGraph& graph, int pp, int dp, const TaskletVolumes& volumes, bool exact_tsp = false);

  int pp() const { return pp_; }
  int dp() const { return dp_; }
  int devices() const { return pp_ * dp_; }

  /// Edge weights of eq. 2 and eq. 3 for one device pair.
  double dp_weight(int a, int b) const { return dp_weight_[a * n_ + b]; }
  double pp_weight(int a, int b) const { return pp_weight_[a * n_ + b]; }

  /// Eq. 2 for one group.
  double group_data_parallel_seconds(std::span<const int> group) const;
  /// Eq. 3 between two groups, with the matching (position in `a` -> position in `b`).
  double group_matching_seconds(std::span<const int> a, std::span<const int> b, std::vector<int>* match = nullptr) const;
  /// The pp x pp coarsened graph of an assignment.
  std::vector<double> coarsened_graph(const Assignment& assignment) const;

  AssignmentCost cost(const Assignment& assignment) const;

  /// The per-group terms behind a cost, so that a swap between two groups re-prices only what it touches
  /// (two data-parallel costs and 2 pp - 3 coarsened edges instead of all pp (pp - 1) / 2).
  struct Terms {
    std::vector<double> group_data_parallel_s; ///< eq. 2 per group
    std::vector<double> coarsened;             ///< pp x pp
    AssignmentCost cost;
  };
  Terms terms(const Assignment& assignment) const;
  /// Re-prices groups `j` and `k` of `terms` for `assignment`, which differs from the one `terms` was built for
  /// only inside those two groups.
  void update_terms(const Assignment& assignment, int j, int k, Terms& terms) const;
  /// The cost with the pipeline order (group indices, first stage first) that achieves it.
  AssignmentCost cost(const Assignment& assignment, OpenPath& order) const;

private:
  OpenPath order(std::span<const double> coarsened) const;

  int n_, pp_, dp_;
  bool exact_tsp_;
  std::vector<double> dp_weight_, pp_weight_;
};

/// Virtual-rank placement (rank = stage * dp + replica) of an assignment: stages follow the TSP order, replica r
/// of the first stage is its group's r-th member, and each next stage's member of replica r is the bottleneck
/// matching partner of the previous one, so pipelines use the links the cost model counted.
std::vector<int> assignment_placement(const DtfmCost& cost, const Assignment& assignment);

} // namespace hetsim::strategies
