/// The DeepSpeed baseline of the decentralized-training comparison: ZeRO stage 3 (fully sharded) data
/// parallelism over every device, node-first placement, the micro-batch the estimate prefers.

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/micro_batch_choice.hpp"

#include "core/error.hpp"

#include <string>

namespace hetsim::strategies {
namespace {

class Zero3Planner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "zero3");
    const int devices = problem.cluster->device_count();
    if (micro_batch_sizes(problem.global_batch, devices).empty())
      throw InfeasiblePlan("zero3: global batch " + std::to_string(problem.global_batch) +
                           " is not divisible by the " + std::to_string(devices) + " devices");
    return {best_micro_batch({1, 1, devices}, node_first_placement(*problem.cluster),
                             uniform_stage_starts(static_cast<int>(problem.workload->layers.size()), 1), 3, problem,
                             context, "ZeRO-3 data parallel")};
  }
};

} // namespace

std::unique_ptr<Planner> make_zero3_planner() { return std::make_unique<Zero3Planner>(); }

} // namespace hetsim::strategies
