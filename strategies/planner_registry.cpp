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
      {"poplar", "Poplar: per-device micro-batches from profiled speed curves, ZeRO 0-3 (flag zero=N)", make_poplar_planner},
      {"deepspeed", "DeepSpeed baseline: one micro-batch everywhere, the largest the smallest GPU holds", make_deepspeed_planner},
      {"whale", "Whale baseline: the batch split in proportion to datasheet FP16 peak", make_whale_planner},
      {"osdp", "OSDP: per-layer replicated or ZeRO-sharded (with 2/4/8 slices), best batch per device", make_osdp_planner},
  };
  return registry;
}

} // namespace hetsim::strategies
