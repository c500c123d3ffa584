#include "strategies/planners/registry.hpp"

#include "core/error.hpp"

#include <string>

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
      {"poplar", "Poplar: per-device micro-batches from profiled speed curves, ZeRO 0-3 (flag zero=N)",
       make_poplar_planner},
      {"deepspeed", "DeepSpeed baseline: one micro-batch everywhere, the largest the smallest GPU holds",
       make_deepspeed_planner},
      {"whale", "Whale baseline: the batch split in proportion to datasheet FP16 peak", make_whale_planner},
      {"osdp", "OSDP: per-layer replicated or ZeRO-sharded (with 2/4/8 slices), best batch per device",
       make_osdp_planner},
      {"dtfm", "decentralized training: genetic search of data-parallel groups, TSP stage order", make_dtfm_planner},
      {"dtfm-kl", "dtfm with the Kernighan-Lin local search", make_dtfm_kl_planner},
      {"dtfm-random", "dtfm shapes on a seeded random layout (no scheduler)", make_dtfm_random_planner},
      {"megatron-grid", "tp, pp, dp in {1,2,4,8} on a seeded random layout", make_megatron_grid_planner},
      {"zero3", "ZeRO-3 data parallelism over every device", make_zero3_planner},
  };
  return registry;
}

const PlannerInfo& find_planner(std::string_view name)
{
  std::string known;
  for (const PlannerInfo& info : planners()) {
    if (info.name == name)
      return info;
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  throw InputError("unknown planner " + quote(name) + "; known: " + known);
}

} // namespace hetsim::strategies
