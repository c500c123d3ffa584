#include "models/operator.hpp"

#include "models/workload.hpp"

#include <algorithm>

namespace hetsim::models {

double Operator::flops_per_sample() const
{
  switch (kind) {
  case OperatorKind::linear:
    return 2 * m * n * k * std::max(1.0, experts);
  case OperatorKind::batched_matmul:
    return 2 * m * n * k * count;
  case OperatorKind::fused_attention:
    return fixed_flops_per_sample;
  case OperatorKind::memory_bound:
    break;
  }
  return 0; // elementwise arithmetic is not counted, as in Megatron-LM's FLOP formula
}

namespace {

Kernel matmul(const std::string& name, double m, double n, double k, double batch)
{
  Kernel kernel;
  kernel.name  = name;
  kernel.kind  = Kernel::Kind::matmul;
  kernel.m     = m;
  kernel.n     = n;
  kernel.k     = k;
  kernel.batch = batch;
  kernel.flops = 2 * m * n * k * batch;
  kernel.bytes = 2 * (m * k + k * n + m * n) * batch;
  return kernel;
}

/// The kernels the operator is priced as, before autocast's casts and the launches eager PyTorch adds.
std::vector<Kernel> priced_kernels(const Operator& op, int tp, double samples, bool backward,
                                   bool sequence_parallel)
{
  const double divisor = op.tensor_parallel_divisor(tp, sequence_parallel);
  switch (op.kind) {
  case OperatorKind::linear:
  case OperatorKind::batched_matmul: {
    const bool batched = op.kind == OperatorKind::batched_matmul;
    // Routed experts run as one grouped product: each expert's rows of every sample.
    double m           = batched ? op.m : op.m * samples;
    double n = op.n, k = op.k, batch = batched ? op.count * samples : std::max(1.0, op.experts);
    if (op.split == TensorSplit::columns)
      n /= divisor;
    else if (op.split == TensorSplit::rows)
      k /= divisor;
    else if (op.split == TensorSplit::heads)
      batch /= divisor;
    else if (op.split == TensorSplit::replicated && !batched) // its 1/tp of the tokens (sequence parallelism)
      m /= divisor;
    if (!backward)
      return {matmul(op.name, m, n, k, batch)};
    // The gradient of the input (m x n times n x k) and of the second operand (k x m times m x n): a linear
    // operator's weights, or a batched product's second input.
    Kernel second            = matmul(op.name + ".wgrad", k, n, m, batch);
    second.weight_gradient   = !batched;
    return {matmul(op.name + ".dgrad", m, k, n, batch), second};
  }
  case OperatorKind::fused_attention: {
    // FlashAttention-2 (Dao, 2023): the backward runs five products against the forward's two (the scores are
    // recomputed), 2.5 times the FLOPs, and moves twice the bytes.
    Kernel kernel;
    kernel.name  = op.name;
    kernel.kind  = Kernel::Kind::fused_attention;
    kernel.m     = op.m;
    kernel.n     = op.n;
    kernel.k     = op.k;
    kernel.batch = op.count * samples / divisor;
    kernel.flops = op.fixed_flops_per_sample * samples / divisor * (backward ? 2.5 : 1);
    kernel.bytes = op.bytes_per_sample * samples / divisor * (backward ? 2 : 1);
    kernel.attention     = op.attention;
    kernel.explicit_mask = op.explicit_mask;
    return {kernel};
  }
  case OperatorKind::memory_bound: {
    // Backward reads the output gradient and what was saved and writes the input gradient: twice the forward.
    // A vocabulary-parallel lookup still writes a whole (masked) output; only its table is divided.
    Kernel kernel;
    kernel.name             = op.name;
    const double per_sample = op.split == TensorSplit::vocabulary ? 1.0 : divisor;
    kernel.bytes            = op.bytes_per_sample * samples / per_sample * (backward ? 2 : 1);
    kernel.tensor_bytes     = op.tensor_bytes_per_sample * samples / per_sample;
    if (backward) {
      const double table  = op.backward_fixed_bytes / op.tensor_parallel_divisor(tp); // a whole table per member
      kernel.bytes       += table;
      kernel.tensor_bytes = std::max(kernel.tensor_bytes, table);
    }
    const double share = backward ? op.unvectorized_share_backward : op.unvectorized_share_forward;
    if (share <= 0)
      return {kernel};
    Kernel unvectorized      = kernel;
    unvectorized.bytes       = kernel.bytes * share;
    unvectorized.vectorized  = false;
    kernel.bytes            -= unvectorized.bytes;
    return {kernel, unvectorized};
  }
  }
  return {};
}

} // namespace

std::vector<Kernel> operator_kernels(const Operator& op, int tp, double samples, bool backward,
                                     bool sequence_parallel)
{
  std::vector<Kernel> kernels = priced_kernels(op, tp, samples, backward, sequence_parallel);
  const double divisor        = op.tensor_parallel_divisor(tp, sequence_parallel);
  for (Kernel& kernel : kernels)
    kernel.fp8 = op.fp8 && kernel.kind == Kernel::Kind::matmul;
  // fp8: the input quantized before the forward product, the output gradient before the backward's. Split like
  // the product: a column-parallel input is whole on every member, its output gradient a 1/tp slice.
  const double quantize = (backward ? op.quantize_backward_bytes_per_sample : op.quantize_bytes_per_sample) * samples;
  if (quantize > 0) {
    Kernel cast;
    cast.name  = op.name + ".quantize";
    cast.bytes = quantize / (backward == (op.split == TensorSplit::columns) ? divisor : 1);
    kernels.push_back(cast);
  }
  const double cast_bytes     = op.cast_bytes_per_sample * samples / divisor + op.cast_fixed_bytes / tp;
  if (cast_bytes > 0) { // autocast's copies to 16-bit, and backward's of the gradients back
    Kernel cast;
    cast.name         = op.name + ".cast";
    cast.bytes        = cast_bytes;
    cast.tensor_bytes = cast_bytes * 4 / 6; // the fp32 side of a 6-byte-per-element copy
    // fp32 to 16-bit loads in vectors (vectorized_elementwise_kernel in the H100 and H200 traces); 16-bit up to
    // fp32 does not (unrolled_elementwise_kernel, at half the rate or less).
    cast.vectorized = !backward;
    kernels.push_back(cast);
  }
  if (backward && op.gradient_sum_bytes_per_sample > 0) {
    Kernel sum;
    sum.name  = op.name + ".gradient_sum";
    sum.bytes = op.gradient_sum_bytes_per_sample * samples / divisor;
    kernels.push_back(sum);
  }
  for (Kernel& kernel : kernels)
    kernel.backward = backward;
  const double launches = backward ? op.launches_backward : op.launches_forward;
  if (!kernels.empty() && launches > static_cast<double>(kernels.size()))
    kernels.front().launches = launches - static_cast<double>(kernels.size() - 1);
  return kernels;
}

void apply_operator_totals(Layer& layer)
{
  layer.params                            = 0;
  layer.forward_flops_per_sample          = 0;
  layer.saved_activation_bytes_per_sample = 0;
  layer.tensor_parallel_all_reduces       = 0;
  layer.transient_bytes_per_sample        = 0;
  layer.parameter_tensors                 = 0;
  layer.expert_params                     = 0;
  layer.all_to_alls                       = 0;
  layer.replicated_saved_bytes_per_sample = 0;
  layer.selective_saved_bytes_per_sample  = 0;
  layer.selective_recompute_flops_per_sample = 0;
  for (const Operator& op : layer.operators) {
    layer.params += op.params;
    layer.expert_params += op.experts > 0 ? op.params : 0;
    layer.all_to_alls += op.all_to_all_bytes_per_sample > 0 ? 1 : 0;
    layer.parameter_tensors += op.params > 0 ? std::max(1, op.tensors) : 0;
    layer.forward_flops_per_sample += op.flops_per_sample();
    layer.saved_activation_bytes_per_sample += op.saved_bytes_per_sample;
    layer.selective_saved_bytes_per_sample +=
        op.selective_saved_bytes_per_sample.value_or(op.selectively_recomputed ? 0 : op.saved_bytes_per_sample);
    layer.selective_recompute_flops_per_sample += op.selectively_recomputed ? op.selective_rerun().flops_per_sample() : 0;
    // A column-parallel product keeps its input, the whole activation every member was given.
    if (op.split == TensorSplit::replicated || (op.kind == OperatorKind::linear && op.split == TensorSplit::columns))
      layer.replicated_saved_bytes_per_sample += op.saved_bytes_per_sample;
    layer.transient_bytes_per_sample = std::max(layer.transient_bytes_per_sample, op.transient_bytes_per_sample);
    if (op.split == TensorSplit::rows || op.split == TensorSplit::vocabulary)
      ++layer.tensor_parallel_all_reduces;
  }
  layer.backward_flops_per_sample = 2 * layer.forward_flops_per_sample;
}

std::vector<OperatorGroup> communication_groups(const std::vector<Operator>& ops, int tp, int ep, int cp)
{
  std::vector<OperatorGroup> groups(1);
  for (const Operator& op : ops) {
    const bool ring = cp > 1 && op.key_value_bytes_per_sample > 0;
    if (ring && !groups.back().operators.empty()) // the ring starts once the keys and values exist
      groups.emplace_back();
    OperatorGroup& group = groups.back();
    group.operators.push_back(&op);
    group.flops_per_sample += op.flops_per_sample();
    group.weight_gradient_flops_per_sample += op.weight_gradient_flops_per_sample();
    if (ring) {
      group.key_value_bytes_per_sample = op.key_value_bytes_per_sample;
      groups.emplace_back();
      continue;
    }
    const bool reduces = tp > 1 && (op.split == TensorSplit::rows || op.split == TensorSplit::vocabulary);
    const bool routes  = ep > 1 && op.all_to_all_bytes_per_sample > 0;
    if (!reduces && !routes)
      continue;
    group.all_reduce = reduces;
    // An expert's row-parallel output is its tokens' (m rows per expert), not the layer's.
    group.all_reduce_bytes_per_sample = reduces && op.experts > 0 ? 2 * op.m * op.n * op.experts : 0;
    group.all_to_all_bytes_per_sample = routes ? op.all_to_all_bytes_per_sample : 0;
    groups.emplace_back();
  }
  // Trailing operators join the last communicating group, unless that is an attention beside its ring: they
  // stay a group of their own, which waits for the ring.
  if (groups.size() > 1 && groups[groups.size() - 2].key_value_bytes_per_sample == 0) {
    OperatorGroup trailing = std::move(groups.back());
    groups.pop_back();
    groups.back().operators.insert(groups.back().operators.end(), trailing.operators.begin(),
                                   trailing.operators.end());
    groups.back().flops_per_sample += trailing.flops_per_sample;
    groups.back().weight_gradient_flops_per_sample += trailing.weight_gradient_flops_per_sample;
  } else if (groups.size() > 1 && groups.back().operators.empty()) {
    groups.pop_back();
  }
  return groups;
}

Operator Operator::selective_rerun() const
{
  if (selective_rerun_width <= 0 || n <= 0)
    return *this;
  Operator part = *this; // the products it reruns, each one launch
  const double share  = selective_rerun_width / n;
  part.n              = selective_rerun_width;
  part.params         = params * share;
  part.launches_forward = part.launches_backward = 0;
  part.call_widths.clear();
  return part;
}

std::vector<double> parameter_tensor_sizes(const Operator& op)
{
  const int tensors = op.params > 0 ? std::max(1, op.tensors) : 0;
  if (tensors == 0)
    return {};
  if (op.kind == OperatorKind::linear && tensors == 2 && op.n > 0 && op.n < op.params)
    return {op.params - op.n, op.n};
  return std::vector<double>(tensors, op.params / tensors);
}

std::vector<double> parameter_tensor_sizes_at_least(const Operator& op, double min_elements, int tp)
{
  std::vector<double> tensors = parameter_tensor_sizes(op);
  const double ranks          = op.tensor_parallel_divisor(tp);
  std::erase_if(tensors, [&](double elements) { return elements / ranks < min_elements; });
  return tensors;
}

namespace {

/// Calls `each(elements)` for every tensor of `layer` of `min_elements` or more per tensor-parallel rank.
template <typename Each>
void for_tensors_at_least(const Layer& layer, double min_elements, int tp, Each each)
{
  for (const Operator& op : layer.operators)
    for (double elements : parameter_tensor_sizes_at_least(op, min_elements, tp))
      each(elements);
}

} // namespace

int parameter_tensors_at_least(const Layer& layer, double min_elements, int tp)
{
  if (layer.operators.empty())
    return layer.params > 0 ? std::max(1, layer.parameter_tensors) : 0;
  int count = 0;
  for_tensors_at_least(layer, min_elements, tp, [&](double) { ++count; });
  return count;
}

double parameter_elements_at_least(const Layer& layer, double min_elements, int tp)
{
  if (layer.operators.empty())
    return layer.params;
  double sum = 0;
  for_tensors_at_least(layer, min_elements, tp, [&](double elements) { sum += elements; });
  return sum;
}

} // namespace hetsim::models
