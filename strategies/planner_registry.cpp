#include "strategies/planner.hpp"
#include "strategies/planners.hpp"

namespace hetsim::strategies {

const std::vector<PlannerInfo>& planners()
{
  static const std::vector<PlannerInfo> registry = {
      {"amp", "AMP: every (tp, pp, dp, micro-batch), node-first placement, per-GPU-type DP layer assignment",
       make_amp_planner},
      {"hethub", "HETHUB: non-uniform pipeline stages over homogeneous node groups, stage order by communication",
       make_hethub_planner},
      {"megatron", "Megatron heuristics: tp within a node, smallest tp x pp that fits, uniform stages",
       make_megatron_planner},
      {"random", "uniformly random valid 3D plans (seeded)", make_random_planner},
  };
  return registry;
}

} // namespace hetsim::strategies
