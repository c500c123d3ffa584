#include "strategies/lowering/parameter_gather.hpp"

namespace hetsim::strategies {

double gathered_bytes_per_param(const std::vector<models::Layer>& layers, const std::vector<std::pair<int, int>>& ranges,
                                const Plan& plan)
{
  const double dtype = dtype_bytes(plan.dtype);
  if (!plan.framework.fp8_param_gather)
    return dtype;
  const bool experts_apart = plan.ep > 1;
  double params = 0, fp8 = 0;
  for (const auto& [first, end] : ranges)
    for (int l = first; l < end; ++l) {
      params += layers[l].params - (experts_apart ? layers[l].expert_params : 0);
      for (const models::Operator& op : layers[l].operators)
        if (op.fp8 && (op.experts <= 0 || !experts_apart))
          fp8 += op.params;
    }
  return params > 0 ? (dtype * (params - fp8) + fp8) / params : dtype;
}

double gathered_expert_bytes_per_param(const Plan& plan)
{
  return plan.framework.fp8_param_gather ? 1 : dtype_bytes(plan.dtype);
}

} // namespace hetsim::strategies
