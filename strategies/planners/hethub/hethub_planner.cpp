/// HETHUB (Xu et al., 2024), §3.3: a three-level search tree — non-uniform pipeline stages across heterogeneous
/// node groups, uniform data parallelism over the homogeneous nodes of a stage, uniform tensor parallelism inside
/// a node — searched depth first, every leaf scored by the cost model.
///
/// Level 1 picks the stage size (devices per stage, dividing every GPU type's device count, so each stage is
/// homogeneous) and the order of the type blocks along the pipeline (every order is a leaf: the cost model sees
/// which boundaries cross the slow links between types); level 2 the data-parallel degree; level 3 tp, which
/// divides every node. Layers go to stages in proportion to each stage's speed (rule 1, load balance), capped by
/// what fits in the stage's memory. A mixture-of-experts model adds the expert-parallel degree to level 2 (its
/// groups are made of a stage's replicas).

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/amp/pipeline_costs.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>

namespace hetsim::strategies {
namespace {

/// Nodes of one GPU type, in cluster order.
struct TypeBlock {
  int gpu = 0;
  std::vector<int> devices;
};

std::vector<TypeBlock> type_blocks(const Cluster& cluster)
{
  std::map<int, TypeBlock> by_gpu; // gpu index -> block; a node whose devices mix types joins its first's
  for (const Node& node : cluster.nodes()) {
    TypeBlock& block = by_gpu[cluster.device(node.devices.front()).gpu];
    block.gpu        = cluster.device(node.devices.front()).gpu;
    block.devices.insert(block.devices.end(), node.devices.begin(), node.devices.end());
  }
  std::vector<TypeBlock> blocks;
  for (auto& [gpu, block] : by_gpu)
    blocks.push_back(std::move(block));
  return blocks;
}

/// Layers in proportion to each stage's speed, in pipeline order; each stage takes what its share asks, at least
/// one layer, and no more than fits. Empty when some stage cannot fit even one layer.
std::optional<std::vector<int>> proportional_stages(const PipelineCosts& costs, int stages, int layer_count)
{
  std::vector<double> speed(stages);
  for (int s = 0; s < stages; ++s)
    speed[s] = 1.0 / costs.compute_seconds(s, 0, layer_count);
  std::vector<int> starts;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int left  = layer_count - first;
    const int after = stages - s - 1;
    int count       = left;
    if (after > 0) {
      const double share = speed[s] / std::accumulate(speed.begin() + s, speed.end(), 0.0);
      count              = std::clamp(static_cast<int>(std::lround(left * share)), 1, left - after);
    }
    while (count > 1 && !costs.fits(s, first, first + count))
      --count;
    if (!costs.fits(s, first, first + count) || (after == 0 && count != left))
      return std::nullopt;
    starts.push_back(first);
    first += count;
  }
  return starts;
}

class HethubPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "hethub");
    const Cluster& cluster        = *problem.cluster;
    const int layer_count         = static_cast<int>(problem.workload->layers.size());
    std::vector<TypeBlock> blocks = type_blocks(cluster);
    int common                    = 0; // stage sizes must divide every type's device count
    for (const TypeBlock& b : blocks)
      common = std::gcd(common, static_cast<int>(b.devices.size()));
    const int max_tp                      = max_tensor_parallel(problem);
    const costmodel::ComputeModel compute = context.compute_model();

    // Every order of the type blocks along the pipeline (few types in practice; beyond 5, cluster order only).
    std::vector<std::vector<int>> orders;
    std::vector<int> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    do
      orders.push_back(order);
    while (blocks.size() <= 5 && std::next_permutation(order.begin(), order.end()));

    std::vector<Candidate> candidates;
    const auto sizes = divisors(common);
    long long done   = 0;
    for (int stage_size : sizes) {
      const int pp = cluster.device_count() / stage_size;
      if (pp <= layer_count)
        for (const auto& block_order : orders)
          for (int tp : divisors(std::gcd(max_tp, stage_size)))
            explore(problem, context, compute, blocks, block_order, Degrees{tp, pp, stage_size / tp}, candidates);
      if (context.progress)
        context.progress("hethub: stage sizes", ++done, static_cast<long long>(sizes.size()));
    }
    if (candidates.empty())
      throw InfeasiblePlan("hethub: no stage size divides every GPU type's device count with at most " +
                           std::to_string(layer_count) +
                           " stages and a data-parallel degree dividing the global "
                           "batch " +
                           std::to_string(problem.global_batch));
    return candidates;
  }

private:
  static void explore(const Problem& problem, const PlannerContext& context, const costmodel::ComputeModel& compute,
                      const std::vector<TypeBlock>& blocks, const std::vector<int>& block_order, const Degrees& d,
                      std::vector<Candidate>& candidates)
  {
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    std::vector<int> placement;
    std::string order_text;
    for (int b : block_order) {
      placement.insert(placement.end(), blocks[b].devices.begin(), blocks[b].devices.end());
      order_text += (order_text.empty() ? "" : " > ") + problem.cluster->gpus()[blocks[b].gpu].name;
    }
    for (int mbs : micro_batch_sizes(problem.global_batch, d.dp))
      for (int ep : expert_parallel_degrees(d.dp, *problem.workload)) {
        Plan plan  = uniform_batch_plan(d, placement, {}, mbs, problem);
        plan.ep    = ep;
        bool found = false;
        for (Recompute recompute : recompute_choices(*problem.workload)) {
          plan.set_recompute(recompute);
          const PipelineCosts costs(plan, problem, compute);
          if (auto starts = proportional_stages(costs, d.pp, layer_count)) {
            plan.stage_starts = std::move(*starts);
            const std::string note = recompute_note(recompute);
            candidates.push_back(
                evaluate(plan, problem, context, "stages " + order_text + (note.empty() ? "" : ", " + note)));
            found = true;
            break;
          }
        }
        if (!found) { // reported, marked as not fitting
          plan.stage_starts = uniform_stage_starts(layer_count, d.pp);
          candidates.push_back(evaluate(plan, problem, context, "stages " + order_text + ", no split fits"));
        }
      }
  }
};

} // namespace

std::unique_ptr<Planner> make_hethub_planner()
{
  return std::make_unique<HethubPlanner>();
}

} // namespace hetsim::strategies
