#include "strategies/planners/registry.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <string>

namespace hetsim::strategies {

const std::vector<PlannerInfo>& planners()
{
  static const std::vector<PlannerInfo> registry = {
      {"amp", "AMP: every (tp, pp, dp, micro-batch), node-first placement, per-GPU-type DP layer assignment",
       make_amp_planner, {"anneal"}},
      {"hethub", "HETHUB: non-uniform pipeline stages over homogeneous node groups, stage order by communication",
       make_hethub_planner},
      {"megatron", "Megatron heuristics: tp within a node, smallest tp x pp that fits, uniform stages",
       make_megatron_planner},
      {"random", "uniformly random valid 3D plans (seeded)", make_random_planner},
      {"poplar", "Poplar: per-device micro-batches from profiled speed curves, ZeRO 0-3",
       make_poplar_planner, {"zero=N"}},
      {"deepspeed", "DeepSpeed baseline: one micro-batch everywhere, the largest the smallest GPU holds",
       make_deepspeed_planner, {"zero=N"}},
      {"whale", "Whale baseline: the batch split in proportion to datasheet FP16 peak", make_whale_planner, {"zero=N"}},
      {"osdp", "OSDP: per-layer replicated or ZeRO-sharded (with 2/4/8 slices), best batch per device",
       make_osdp_planner},
      {"dtfm", "decentralized training: genetic search of data-parallel groups, TSP stage order", make_dtfm_planner, {"pp=N"}},
      {"dtfm-kl", "dtfm with the Kernighan-Lin local search", make_dtfm_kl_planner, {"pp=N"}},
      {"dtfm-random", "dtfm shapes on a seeded random layout (no scheduler)", make_dtfm_random_planner,
       {"pp=N"}},
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

void check_planner_flags(const PlannerInfo& planner, const std::vector<std::string>& flags)
{
  std::string takes;
  for (std::string_view form : planner.flags)
    takes += (takes.empty() ? "" : ", ") + std::string(form);
  for (const std::string& flag : flags) {
    const std::size_t equals    = flag.find('=');
    const std::string_view name = std::string_view(flag).substr(0, equals);
    const auto form             = std::find_if(planner.flags.begin(), planner.flags.end(),
                                               [&](std::string_view f) { return f.substr(0, f.find('=')) == name; });
    if (form == planner.flags.end())
      throw InputError("--flag " + quote(flag) + ": planner " + std::string(planner.name) +
                       (takes.empty() ? " takes no flags" : " takes " + takes));
    const bool valued            = form->ends_with("=N");
    const std::string_view value = equals == std::string::npos ? std::string_view() : std::string_view(flag).substr(equals + 1);
    const bool whole_number = !value.empty() && value.size() <= 6 && value.find_first_not_of("0123456789") == std::string_view::npos;
    if (valued ? !whole_number : equals != std::string::npos)
      throw InputError("--flag " + quote(flag) + ": expected " + std::string(*form) +
                       (valued ? " with N a whole number" : " without a value"));
  }
}

} // namespace hetsim::strategies
