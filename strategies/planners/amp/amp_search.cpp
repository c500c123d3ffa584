#include "strategies/planners/amp/amp_search.hpp"

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/amp/layer_assignment.hpp"
#include "strategies/planners/amp/pipeline_costs.hpp"
#include "strategies/search/plan_space.hpp"
#include "strategies/search/seeded_random.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace hetsim::strategies {

Candidate best_assignment(Plan shape, const Problem& problem, const PlannerContext& context,
                          const costmodel::ComputeModel& compute)
{
  const int layer_count   = static_cast<int>(problem.workload->layers.size());
  const int micro_batches = *std::max_element(shape.grad_accum.begin(), shape.grad_accum.end());
  for (Recompute recompute : recompute_choices(*problem.workload)) {
    shape.set_recompute(recompute);
    const PipelineCosts costs(shape, problem, compute);
    if (auto assignment = assign_layers(layer_count, shape.pp, micro_batches, costs.model())) {
      shape.stage_starts = std::move(assignment->stage_starts);
      return evaluate(std::move(shape), problem, context, recompute_note(recompute));
    }
  }
  shape.stage_starts = uniform_stage_starts(layer_count, shape.pp);
  return evaluate(std::move(shape), problem, context, "no layer assignment fits in memory");
}

namespace {

/// A random domino tiling of the mesh whose columns are the nodes (in a random order) and whose rows are the
/// devices inside a node: each stage takes a tp x dp block, tensor-parallel ranks down a column (inside a node)
/// or, rotated, along a row. Empty when the nodes differ in size or no tiling was found.
std::vector<int> domino_placement(const Cluster& cluster, int tp, int dp, std::mt19937_64& rng)
{
  const auto& nodes = cluster.nodes();
  const int rows    = static_cast<int>(nodes.front().devices.size());
  for (const Node& node : nodes)
    if (static_cast<int>(node.devices.size()) != rows)
      return {};
  const int cols = static_cast<int>(nodes.size());
  std::vector<int> order(cols);
  for (int c = 0; c < cols; ++c)
    order[c] = c;
  shuffle(order, rng);

  std::vector<int> taken(rows * cols, 0), placement;
  for (int cell = 0; cell < rows * cols; ++cell) {
    if (taken[cell])
      continue;
    const int row = cell % rows, col = cell / rows; // column-major scan: fill a node before the next
    bool placed                 = false;
    const int first_orientation = pick(rng, 2);
    for (int k = 0; k < 2 && !placed; ++k) {
      const bool rotated = (first_orientation + k) % 2 == 1;
      const int height = rotated ? dp : tp, width = rotated ? tp : dp;
      if (row + height > rows || col + width > cols)
        continue;
      bool free = true;
      for (int h = 0; h < height && free; ++h)
        for (int w = 0; w < width && free; ++w)
          free = !taken[(col + w) * rows + row + h];
      if (!free)
        continue;
      for (int r = 0; r < dp; ++r)
        for (int t = 0; t < tp; ++t) {
          const int h = rotated ? r : t, w = rotated ? t : r;
          taken[(col + w) * rows + row + h] = 1;
          placement.push_back(nodes[order[col + w]].devices[row + h]);
        }
      placed = true;
    }
    if (!placed)
      return {};
  }
  return placement;
}

} // namespace

std::vector<Candidate> anneal_placements(const Problem& problem, const PlannerContext& context,
                                         const costmodel::ComputeModel& compute, int iterations)
{
  const int devices     = problem.cluster->device_count();
  const int layer_count = static_cast<int>(problem.workload->layers.size());
  std::mt19937_64 rng(context.seed);
  std::vector<Candidate> accepted;

  auto valid = [&](int tp, int dp) {
    return tp >= 1 && dp >= 1 && devices % (tp * dp) == 0 && devices / (tp * dp) <= layer_count &&
           splits_model(problem, tp) && !micro_batch_sizes(problem.global_batch, dp).empty();
  };
  auto propose = [&](int tp, int dp) -> std::optional<Candidate> {
    if (!valid(tp, dp))
      return std::nullopt;
    const auto sizes = micro_batch_sizes(problem.global_batch, dp);
    const int mbs    = sizes[pick(rng, static_cast<int>(sizes.size()))];
    std::vector<int> placement;
    for (int attempt = 0; attempt < 8 && placement.empty(); ++attempt)
      placement = domino_placement(*problem.cluster, tp, dp, rng);
    if (placement.empty())
      return std::nullopt;
    const Degrees d{tp, devices / (tp * dp), dp};
    Candidate c =
        best_assignment(uniform_batch_plan(d, std::move(placement), {}, mbs, problem), problem, context, compute);
    c.note = c.note.empty() ? "annealed placement" : "annealed placement, " + c.note;
    return c;
  };

  // Start from plain data parallelism (always valid when the batch splits) or the first valid tp.
  std::optional<Candidate> current;
  for (int tp : divisors(devices))
    for (int dp : divisors(devices / tp))
      if (!current && valid(tp, dp))
        current = propose(tp, dp);
  if (!current)
    return accepted;
  auto cost = [](const Candidate& c) {
    return c.fits() ? c.estimate.iteration_time_s : std::numeric_limits<double>::infinity();
  };
  const double scale = std::isfinite(cost(*current)) ? cost(*current) : 1.0;
  accepted.push_back(*current);
  for (int i = 0; i < iterations; ++i) {
    const double temperature = 0.1 * scale * (1.0 - static_cast<double>(i) / iterations) + 1e-12;
    int tp = current->plan.tp, dp = current->plan.dp;
    const auto choices = divisors(devices);
    if (unit(rng) > 0.5)
      tp = choices[pick(rng, static_cast<int>(choices.size()))];
    else
      dp = choices[pick(rng, static_cast<int>(choices.size()))];
    auto next = propose(tp, dp);
    if (!next || !std::isfinite(cost(*next)))
      continue;
    const double probability = std::exp(std::min(cost(*current) - cost(*next), 0.0) / temperature);
    if (unit(rng) < probability) {
      current = std::move(next);
      accepted.push_back(*current);
    }
    if (context.progress)
      context.progress("amp: annealing", i + 1, iterations);
  }
  return accepted;
}

} // namespace hetsim::strategies
