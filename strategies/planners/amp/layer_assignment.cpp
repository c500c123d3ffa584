#include "strategies/planners/amp/layer_assignment.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetsim::strategies {
namespace {

/// One partial assignment: the first j stages cover layers [0, i).
struct Partial {
  double max_s = 0;
  double sum_s = 0;
  int previous = -1; ///< index in the front of cell (j - 1, start of stage j)
  int start    = 0;  ///< first layer of the last stage
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

} // namespace

std::optional<LayerAssignment> assign_layers(int layer_count, int stages, int micro_batches,
                                             const StageCostModel& costs)
{
  HETSIM_ASSERT(stages >= 1 && micro_batches >= 1);
  if (stages > layer_count)
    return std::nullopt;
  // front[j][i]: stages 0..j-1 cover layers [0, i).
  std::vector<std::vector<std::vector<Partial>>> front(stages + 1, std::vector<std::vector<Partial>>(layer_count + 1));
  front[0][0].push_back(Partial{});
  for (int j = 0; j < stages; ++j) {
    const int left = stages - j - 1; // stages still to place after this one, one layer each at least
    for (int start = j; start <= layer_count - left - 1; ++start) {
      const auto& before = front[j][start];
      if (before.empty())
        continue;
      const double boundary = j > 0 ? costs.boundary_seconds(j - 1, start) : 0;
      for (int end = start + 1; end <= layer_count - left; ++end) {
        const double t = costs.stage_seconds(j, start, end);
        if (!std::isfinite(t))
          continue;
        auto& cell = front[j + 1][end];
        for (int k = 0; k < static_cast<int>(before.size()); ++k)
          cell.push_back(Partial{std::max(before[k].max_s, t), before[k].sum_s + t + boundary, k, start});
      }
    }
    for (auto& cell : front[j + 1])
      prune(cell);
  }
  const auto& last = front[stages][layer_count];
  if (last.empty())
    return std::nullopt;
  int best       = 0;
  auto objective = [&](const Partial& p) { return (micro_batches - 1) * p.max_s + p.sum_s; };
  for (int k = 1; k < static_cast<int>(last.size()); ++k)
    if (objective(last[k]) < objective(last[best]))
      best = k;

  LayerAssignment result;
  result.cost_s = objective(last[best]);
  result.stage_starts.assign(stages, 0);
  int end = layer_count, index = best;
  for (int j = stages; j >= 1; --j) {
    const Partial& p           = front[j][end][index];
    result.stage_starts[j - 1] = p.start;
    index                      = p.previous;
    end                        = p.start;
  }
  return result;
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
