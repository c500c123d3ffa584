#include "models/operator.hpp"

#include "models/workload.hpp"

#include <algorithm>

namespace hetsim::models {

double Operator::flops_per_sample() const
{
  switch (kind) {
  case OperatorKind::linear:
  case OperatorKind::batched_matmul:
    return 2 * m * n * k * count;
  case OperatorKind::fused_attention:
    return fixed_flops_per_sample;
  case OperatorKind::memory_bound:
    break;
  }
  return 0; // elementwise arithmetic is not counted, as in Megatron-LM's FLOP formula
}

int kernels(const Operator& op, bool backward)
{
  const bool product = op.kind == OperatorKind::linear || op.kind == OperatorKind::batched_matmul;
  return backward && product ? 2 : 1;
}

void apply_operator_totals(Layer& layer)
{
  layer.params                            = 0;
  layer.forward_flops_per_sample          = 0;
  layer.saved_activation_bytes_per_sample = 0;
  layer.tensor_parallel_all_reduces       = 0;
  layer.transient_bytes_per_sample        = 0;
  for (const Operator& op : layer.operators) {
    layer.params += op.params;
    layer.forward_flops_per_sample += op.flops_per_sample();
    layer.saved_activation_bytes_per_sample += op.saved_bytes_per_sample;
    layer.transient_bytes_per_sample = std::max(layer.transient_bytes_per_sample, op.transient_bytes_per_sample);
    if (op.split == TensorSplit::rows || op.split == TensorSplit::vocabulary)
      ++layer.tensor_parallel_all_reduces;
  }
  layer.backward_flops_per_sample = 2 * layer.forward_flops_per_sample;
}

} // namespace hetsim::models
