#pragma once
/// AMP's pipeline layer assignment (§3.5): contiguous layers per stage minimising eq. 5,
///   (micro_batches - 1) * max_j t_j + sum_j t_j + sum_j e_j,
/// where t_j is stage j's time on the devices that actually run stage j (not an average over GPU types) and e_j
/// the transfer across the boundary after stage j.
///
/// AMP's table dp[i][j][m] enumerates the tolerance m over every possible stage time; here each (layers, stages)
/// cell keeps the Pareto front of (max stage time, sum of times) pairs instead, which gives the same optimum
/// (eq. 5 grows with both) without the O(L^2) tolerance values per cell.

#include <functional>
#include <optional>
#include <vector>

namespace hetsim::strategies {

struct StageCostModel {
  /// Seconds of stage `stage` running layers [first, end); +infinity when they do not fit in its memory.
  std::function<double(int stage, int first, int end)> stage_seconds;
  /// Seconds across the boundary after stage `stage` when it ends at layer `cut` (exclusive).
  std::function<double(int stage, int cut)> boundary_seconds;
  /// Optional: stage_seconds without its memory check, where fitting is monotone (a stage that fits [first,
  /// end) fits every range inside it). The table then asks stage_seconds O(positions) times a stage to find
  /// where each stage stops fitting, instead of O(positions^2) times: a memory check costs as many layers as
  /// the range holds, and was what made the table cubic in the layers.
  std::function<double(int stage, int first, int end)> unchecked_seconds = {};
};

struct LayerAssignment {
  std::vector<int> stage_starts;
  double cost_s = 0; ///< eq. 5 of the assignment
};

/// The most layers assigned by AMP's table over every layer. Beyond, the table runs over this many units of
/// consecutive layers, then again over every layer within two units of each cut it found: exact up to here
/// (every model HetSim ships has at most a few hundred layers), exact beyond whenever the best cuts lie within
/// two units of the units' ones, and seconds rather than hours for a model of 10,000 layers.
inline constexpr int kExactLayerCount = 512;

/// The optimal assignment of `layer_count` layers to `stages` non-empty contiguous stages (see kExactLayerCount
/// for models of more layers), or nothing when no assignment fits.
std::optional<LayerAssignment> assign_layers(int layer_count, int stages, int micro_batches,
                                             const StageCostModel& costs);

/// Eq. 5 of a given assignment (for tests and for scoring fixed assignments).
double assignment_cost(const std::vector<int>& stage_starts, int layer_count, int micro_batches,
                       const StageCostModel& costs);

} // namespace hetsim::strategies
