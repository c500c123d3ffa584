/// The tuned Megatron baseline of the decentralized-training comparison: a full grid over tp, pp, dp in
/// {1, 2, 4, 8} with tp * pp * dp = devices, uniform stages, on one seeded random layout (Megatron has no
/// scheduler of its own, so it runs on the same random layouts as the scheduler's ablation). Tensor-parallel
/// groups may straddle nodes here: that is exactly the setting the grid is meant to expose.

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/micro_batch_choice.hpp"

#include "core/error.hpp"

#include <string>

namespace hetsim::strategies {
namespace {

class MegatronGridPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "megatron-grid");
    const int devices     = problem.cluster->device_count();
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    const auto placement  = random_placement(devices, context.seed);
    std::vector<Candidate> candidates;
    for (int tp : {1, 2, 4, 8})
      for (int pp : {1, 2, 4, 8})
        for (int dp : {1, 2, 4, 8}) {
          if (tp * pp * dp != devices || pp > layer_count || !splits_model(problem, tp) ||
              micro_batch_sizes(problem.global_batch, dp).empty())
            continue;
          candidates.push_back(best_micro_batch({tp, pp, dp}, placement, uniform_stage_starts(layer_count, pp), 0,
                                                problem, context, "grid point, random layout"));
        }
    if (candidates.empty())
      throw InfeasiblePlan("megatron-grid: no tp, pp, dp in {1, 2, 4, 8} multiplies to " + std::to_string(devices) +
                           " devices with dp dividing the global batch " + std::to_string(problem.global_batch));
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_megatron_grid_planner() { return std::make_unique<MegatronGridPlanner>(); }

} // namespace hetsim::strategies
