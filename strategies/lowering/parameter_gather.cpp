#include "strategies/lowering/parameter_gather.hpp"

namespace hetsim::strategies {

double gathered_bytes_per_param(const std::vector<models::Layer>& layers, const std::vector<std::pair<int, int>>& ranges,
                                const Plan& plan)
{
  const double dtype = dtype_bytes(plan.dtype);
  if (!plan.framework.fp8_param_gather)
    return dtype;
  double dense = 0, fp8 = 0;
  for (const auto& [first, end] : ranges)
    for (int l = first; l < end; ++l) {
      dense += layers[l].params - layers[l].expert_params;
      for (const models::Operator& op : layers[l].operators)
        if (op.fp8 && op.experts <= 0)
          fp8 += op.params;
    }
  return dense > 0 ? (dtype * (dense - fp8) + fp8) / dense : dtype;
}

} // namespace hetsim::strategies
