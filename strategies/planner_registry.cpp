#include "strategies/planner.hpp"
#include "strategies/planners.hpp"

namespace hetsim::strategies {

const std::vector<PlannerInfo>& planners()
{
  static const std::vector<PlannerInfo> registry = {
      {"amp", "AMP: every (tp, pp, dp, micro-batch), node-first placement, per-GPU-type DP layer assignment",
       make_amp_planner},
      {"megatron", "Megatron heuristics: tp within a node, smallest tp x pp that fits, uniform stages",
       make_megatron_planner},
      {"random", "uniformly random valid 3D plans (seeded)", make_random_planner},
      {"dtfm", "decentralized training: genetic search of data-parallel groups, TSP stage order", make_dtfm_planner},
      {"dtfm-kl", "dtfm with the Kernighan-Lin local search", make_dtfm_kl_planner},
      {"dtfm-random", "dtfm shapes on a seeded random layout (no scheduler)", make_dtfm_random_planner},
      {"megatron-grid", "tp, pp, dp in {1,2,4,8} on a seeded random layout", make_megatron_grid_planner},
      {"zero3", "ZeRO-3 data parallelism over every device", make_zero3_planner},
  };
  return registry;
}

} // namespace hetsim::strategies
