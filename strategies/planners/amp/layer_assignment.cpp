#include "strategies/planners/amp/layer_assignment.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetsim::strategies {
namespace {

/// One partial assignment: the first j stages placed, the next one starting where its cell says.
struct Partial {
  double max_s = 0;
  double sum_s = 0;
  int previous = -1; ///< index in the front of the cell it extends
  int start    = 0;  ///< that cell: the last stage's first layer, as an index into its allowed first layers
};

/// Keeps only the pairs no other pair beats on both max and sum.
void prune(std::vector<Partial>& front)
{
  std::sort(front.begin(), front.end(), [](const Partial& a, const Partial& b) {
    return a.max_s != b.max_s ? a.max_s < b.max_s : a.sum_s < b.sum_s;
  });
  std::vector<Partial> kept;
  double best_sum = std::numeric_limits<double>::infinity();
  for (const Partial& p : front)
    if (p.sum_s < best_sum) {
      kept.push_back(p);
      best_sum = p.sum_s;
    }
  front = std::move(kept);
}

/// Where a monotone memory check lets it (StageCostModel::unchecked_seconds), for each first layer of stage
/// `stage` the count of `ends` (ascending) whose range fits: the fitting ends of a later first are never fewer,
/// so one sweep of two pointers asks the check O(firsts + ends) times. Empty without unchecked_seconds.
std::vector<int> fitting_ends(int stage, const std::vector<int>& firsts, const std::vector<int>& ends,
                              const StageCostModel& costs)
{
  if (!costs.unchecked_seconds)
    return {};
  std::vector<int> fitting(firsts.size());
  int e = 0; // ends[0, e) fit the current first, or lie at or before it
  for (std::size_t k = 0; k < firsts.size(); ++k) {
    while (e < static_cast<int>(ends.size()) &&
           (ends[e] <= firsts[k] || std::isfinite(costs.stage_seconds(stage, firsts[k], ends[e]))))
      ++e;
    fitting[k] = e;
  }
  return fitting;
}

/// AMP's table with each stage's first layer taken from `firsts[j]` (ascending; firsts[0] is {0}): O(stages x
/// positions^2) cells of Pareto fronts. With every position it is the table over every layer.
std::optional<LayerAssignment> assign_over(const std::vector<std::vector<int>>& firsts, int layer_count,
                                           int micro_batches, const StageCostModel& costs)
{
  const int stages = static_cast<int>(firsts.size());
  // front[j][k]: stages 0..j-1 placed, stage j starting at firsts[j][k]; front[stages][0]: all placed.
  std::vector<std::vector<std::vector<Partial>>> front(stages + 1);
  for (int j = 0; j < stages; ++j)
    front[j].resize(firsts[j].size());
  front[stages].resize(1);
  front[0][0].push_back(Partial{});
  const std::vector<int> the_end{layer_count};
  for (int j = 0; j < stages; ++j) {
    const bool last = j + 1 == stages;
    const auto& ends   = last ? the_end : firsts[j + 1];
    const auto fitting = fitting_ends(j, firsts[j], ends, costs);
    for (int k = 0; k < static_cast<int>(firsts[j].size()); ++k) {
      const auto& before = front[j][k];
      if (before.empty())
        continue;
      const int start       = firsts[j][k];
      const double boundary = j > 0 ? costs.boundary_seconds(j - 1, start) : 0;
      for (int e = 0; e < (fitting.empty() ? static_cast<int>(ends.size()) : fitting[k]); ++e) {
        if (ends[e] <= start)
          continue;
        const double t = fitting.empty() ? costs.stage_seconds(j, start, ends[e])
                                         : costs.unchecked_seconds(j, start, ends[e]);
        if (!std::isfinite(t))
          continue;
        auto& cell = front[j + 1][last ? 0 : e];
        for (int p = 0; p < static_cast<int>(before.size()); ++p)
          cell.push_back(Partial{std::max(before[p].max_s, t), before[p].sum_s + t + boundary, p, k});
      }
    }
    for (auto& cell : front[j + 1])
      prune(cell);
  }
  const auto& done = front[stages][0];
  if (done.empty())
    return std::nullopt;
  auto objective = [&](const Partial& p) { return (micro_batches - 1) * p.max_s + p.sum_s; };
  int best       = 0;
  for (int p = 1; p < static_cast<int>(done.size()); ++p)
    if (objective(done[p]) < objective(done[best]))
      best = p;
  LayerAssignment result;
  result.cost_s = objective(done[best]);
  result.stage_starts.assign(stages, 0);
  int cell = 0, index = best;
  for (int j = stages; j >= 1; --j) {
    const Partial& p           = front[j][cell][index];
    result.stage_starts[j - 1] = firsts[j - 1][p.start];
    index                      = p.previous;
    cell                       = p.start;
  }
  return result;
}

/// Every first layer stage j can have, leaving a layer to each stage before and after it.
std::vector<std::vector<int>> every_first(int layer_count, int stages)
{
  std::vector<std::vector<int>> firsts(stages);
  for (int j = 0; j < stages; ++j)
    for (int first = j; first <= layer_count - (stages - j); ++first)
      firsts[j].push_back(first);
  return firsts;
}

} // namespace

std::optional<LayerAssignment> assign_layers(int layer_count, int stages, int micro_batches,
                                             const StageCostModel& costs)
{
  HETSIM_ASSERT(stages >= 1 && micro_batches >= 1);
  if (stages > layer_count)
    return std::nullopt;
  if (layer_count <= kExactLayerCount)
    return assign_over(every_first(layer_count, stages), layer_count, micro_batches, costs);
  // Past it the table over every layer would take hours (10,000 layers: 10^8 cells a stage). It runs over units
  // of consecutive layers, then again over every layer within two units of each cut it found.
  const int units = std::max(kExactLayerCount, stages);
  std::vector<int> bound(units + 1);
  for (int u = 0; u <= units; ++u)
    bound[u] = static_cast<int>(static_cast<long long>(u) * layer_count / units);
  StageCostModel coarse{
      [&](int stage, int first, int end) { return costs.stage_seconds(stage, bound[first], bound[end]); },
      [&](int stage, int cut) { return costs.boundary_seconds(stage, bound[cut]); }};
  if (costs.unchecked_seconds)
    coarse.unchecked_seconds = [&](int stage, int first, int end) {
      return costs.unchecked_seconds(stage, bound[first], bound[end]);
    };
  const auto by_units = assign_over(every_first(units, stages), units, micro_batches, coarse);
  if (!by_units)
    return std::nullopt;
  const int reach = 2 * ((layer_count + units - 1) / units);
  std::vector<std::vector<int>> firsts(stages, std::vector<int>{0});
  for (int j = 1; j < stages; ++j) {
    firsts[j].clear();
    const int cut = bound[by_units->stage_starts[j]];
    for (int first = std::max(j, cut - reach); first <= std::min(layer_count - (stages - j), cut + reach); ++first)
      firsts[j].push_back(first);
  }
  auto refined = assign_over(firsts, layer_count, micro_batches, costs);
  HETSIM_ASSERT(refined.has_value()); // the units' cuts are among the positions tried
  return refined;
}

double assignment_cost(const std::vector<int>& stage_starts, int layer_count, int micro_batches,
                       const StageCostModel& costs)
{
  double max_s = 0, sum_s = 0;
  const int stages = static_cast<int>(stage_starts.size());
  for (int j = 0; j < stages; ++j) {
    const int end  = j + 1 < stages ? stage_starts[j + 1] : layer_count;
    const double t = costs.stage_seconds(j, stage_starts[j], end);
    max_s          = std::max(max_s, t);
    sum_s += t + (j > 0 ? costs.boundary_seconds(j - 1, stage_starts[j]) : 0);
  }
  return (micro_batches - 1) * max_s + sum_s;
}

} // namespace hetsim::strategies
