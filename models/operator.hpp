#pragma once
/// One kernel-level step of a layer's forward pass: the unit the cost model prices and the executors run. A
/// layer's parameters, FLOPs, bytes moved and saved activations are sums over its operators (layer_totals).

#include <string>
#include <vector>

namespace hetsim::models {

enum class OperatorKind {
  linear,          ///< tokens x k times a k x n weight: the samples of a micro-batch stack along the rows (m)
  batched_matmul,  ///< `count` independent m x k times k x n products per sample (attention scores, context)
  fused_attention, ///< flash attention: scores, softmax and context in one kernel, no s x s matrix in memory
  memory_bound,    ///< norm, softmax, dropout, activation, bias, residual, lookup, loss: bytes, not FLOPs
};

/// How Megatron-style tensor parallelism divides the operator over a group of tp devices.
enum class TensorSplit {
  replicated, ///< every member runs it whole (norms, residuals without sequence parallelism)
  columns,    ///< n / tp (QKV, first MLP projection, vocabulary-parallel logits)
  rows,       ///< k / tp, an all-reduce of the output follows (attention output, second MLP projection)
  heads,      ///< count / tp or bytes / tp (attention internals, activations between the two projections)
  vocabulary, ///< a vocabulary-parallel lookup: each member holds V / tp rows, an all-reduce follows
};

struct Operator {
  std::string name;
  OperatorKind kind  = OperatorKind::memory_bound;
  TensorSplit split  = TensorSplit::replicated;
  double m = 0, n = 0, k = 0; ///< matrix products: rows per sample (linear) or per matrix (batched), out, in
  double count  = 1;          ///< matrices per sample (batched_matmul, fused_attention: the heads)
  double params = 0;          ///< weights it owns (16-bit during the step)
  /// Bytes read and written by one forward pass on one sample, 16-bit activations (memory-bound operators and
  /// fused attention; the matrix products' bytes follow from their shapes).
  double bytes_per_sample = 0;
  /// Bytes its backward moves beyond the forward's twice (the embedding's full gradient table).
  double backward_fixed_bytes = 0;
  double saved_bytes_per_sample = 0; ///< what it keeps for backward without recompute, 16-bit
  /// Short-lived working memory while its backward runs, beyond what it saved (the loss's fp32 logit
  /// gradient; a non-fused attention's score and softmax gradients).
  double transient_bytes_per_sample = 0;
  double fixed_flops_per_sample  = 0; ///< FLOPs of fused attention (its shape is its heads x s x s x head size)

  /// Forward FLOPs on one sample, whole (before any tensor-parallel split).
  double flops_per_sample() const;
  /// The factor tp divides this operator's work and bytes by.
  double tensor_parallel_divisor(int tp) const
  {
    return split == TensorSplit::replicated ? 1.0 : static_cast<double>(tp);
  }
};

/// Kernels one forward (backward = false) or backward pass of the operator launches: two per matrix product
/// in backward (input and weight gradients), one otherwise.
int kernels(const Operator& op, bool backward);

} // namespace hetsim::models
