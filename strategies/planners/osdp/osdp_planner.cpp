/// OSDP as a planner: one data-parallel replica per device and the same micro-batch on each; for every
/// micro-batch size (ascending, until even the most sharded choice runs out of memory, as the paper's
/// Scheduler does) the per-layer search of osdp_search.hpp; every batch's best plan is proposed, and the
/// search ranks them by time per iteration of the fixed global batch, i.e. time per sample.

#include "strategies/planners/osdp/osdp_search.hpp"

#include "core/error.hpp"
#include "costmodel/collective.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include <algorithm>
#include <numeric>

namespace hetsim::strategies {
namespace {

/// The search's inputs for `micro_batch` sequences per device: layer costs over one ring of all devices,
/// and the memory left by the smallest device once the activations and the workspace are in.
OsdpProblem osdp_problem(const Problem& problem, const Plan& plan)
{
  using costmodel::CollectiveOp;
  const Cluster& cluster = *problem.cluster;
  const auto& layers     = problem.workload->layers;
  std::vector<int> all(cluster.device_count());
  std::iota(all.begin(), all.end(), 0);
  auto seconds = [&](CollectiveOp op, double bytes) {
    return costmodel::collective_seconds(cluster, all, op, costmodel::Algorithm::ring, bytes);
  };

  OsdpProblem out;
  out.devices         = plan.dp;
  out.micro_steps     = plan.grad_accum[0];
  out.weight_bytes    = dtype_bytes(plan.dtype);
  out.optimizer_bytes = optimizer_bytes_per_parameter(plan.dtype);
  for (const models::Layer& layer : layers) {
    OsdpLayer cost;
    cost.params        = layer.params;
    const double bytes = layer.params * out.weight_bytes;
    if (bytes > 0) {
      for (int k = 0; k < 4; ++k) {
        cost.all_gather_s[k]     = seconds(CollectiveOp::all_gather, bytes / kOsdpSlices[k]);
        cost.reduce_scatter_s[k] = seconds(CollectiveOp::reduce_scatter, bytes / kOsdpSlices[k]);
      }
      cost.all_reduce_s = seconds(CollectiveOp::all_reduce, bytes);
    }
    out.layers.push_back(cost);
  }
  // The framework's buffers and the transient peak as with every layer sharded: their least. The step's fp32
  // gradient copy grows with what a choice keeps unsharded, which plan_memory counts once the choice is made:
  // sharded_plan() tightens the budget by what it finds over.
  Plan all_sharded = plan;
  all_sharded.layer_sharding.assign(layers.size(), LayerSharding{1, 1});
  const DeviceMemory m = stage_device_memory(all_sharded, problem, 0, 0, static_cast<int>(layers.size()), 0);
  double capacity      = problem.memory_capacity(0);
  for (int d = 1; d < cluster.device_count(); ++d)
    capacity = std::min(capacity, problem.memory_capacity(d));
  out.available_bytes = capacity - problem.workspace_bytes.value_or(0) - m.activation_bytes - m.framework_bytes -
                        m.transient_bytes;
  return out;
}

/// Sets the plan's per-layer sharding to the search's fastest choice that the memory model lets fit; false when
/// none does. The search's budget starts from the least transient memory (osdp_problem) and is lowered by what
/// plan_memory finds over until the choice fits: a few rounds, as only the step's gradient copy moves.
bool shard_to_fit(Plan& plan, const Problem& problem)
{
  OsdpProblem search = osdp_problem(problem, plan);
  for (int round = 0; round < 8; ++round) {
    const OsdpResult best = osdp_search(search);
    if (!best.feasible)
      return false;
    plan.layer_sharding = best.choice;
    double over         = 0;
    for (const DeviceMemory& m : plan_memory(plan, problem))
      over = std::max(over, m.over_bytes());
    if (over <= 0)
      return true;
    search.available_bytes -= over;
  }
  return false;
}

class OsdpPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "osdp");
    const int n = problem.cluster->device_count();
    if (problem.global_batch % n != 0)
      throw InfeasiblePlan("osdp: expected a global batch divisible by the " + std::to_string(n) +
                           " devices (the same micro-batch on each), got " + std::to_string(problem.global_batch));
    const int per_device = problem.global_batch / n;
    const int layers     = static_cast<int>(problem.workload->layers.size());
    // Every micro-batch size that fits, smallest first.
    auto candidates_with = [&](Recompute recompute) {
      std::vector<Candidate> candidates;
      for (int micro : divisors(per_device)) {
        Plan plan = uniform_batch_plan(Degrees{1, 1, n}, std::vector<int>(), {0}, micro, problem);
        plan.placement.resize(n);
        std::iota(plan.placement.begin(), plan.placement.end(), 0);
        plan.set_recompute(recompute);
        if (!shard_to_fit(plan, problem))
          break; // larger micro-batches only need more memory
        int sharded = 0;
        for (const LayerSharding& s : plan.layer_sharding)
          sharded += s.sharded > 0 ? 1 : 0;
        candidates.push_back(evaluate(std::move(plan), problem, context,
                                      std::to_string(sharded) + " of " + std::to_string(layers) + " layers sharded" +
                                          (recompute == Recompute::none ? "" : ", " + recompute_note(recompute))));
      }
      return candidates;
    };
    // Recompute only when not even one sequence fits without it, the least rerun first: it costs a forward pass
    // (or its attention core) more per step.
    std::vector<Candidate> candidates;
    for (Recompute recompute : recompute_choices(*problem.workload))
      if (candidates.empty())
        candidates = candidates_with(recompute);
    if (candidates.empty())
      throw InfeasiblePlan("osdp: even one sequence per device with every layer sharded and activation recompute "
                           "does not fit the memory of " + problem.workload->name);
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_osdp_planner() { return std::make_unique<OsdpPlanner>(); }

} // namespace hetsim::strategies
