#pragma once
/// One kernel-level step of a layer's forward pass: the unit the cost model prices and the executors run. A
/// layer's parameters, FLOPs, bytes moved and saved activations are sums over its operators (layer_totals).

#include "models/attention_kernel.hpp"

#include <optional>
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
  /// Matrix products: rows per sample (linear) or per matrix (batched), out, in. Fused attention: sequence,
  /// sequence, head size.
  double m = 0, n = 0, k = 0;
  double count  = 1;          ///< matrices per sample (batched_matmul, fused_attention: the heads)
  double params = 0;          ///< weights it owns (16-bit during the step)
  int tensors   = 0;          ///< parameter tensors holding them (a weight and a bias are two)
  /// Bytes read and written by one forward pass on one sample, 16-bit activations (memory-bound operators and
  /// fused attention; the matrix products' bytes follow from their shapes).
  double bytes_per_sample = 0;
  /// The largest tensor one of its passes reads or writes, 16-bit bytes per sample (a memory-bound operator moves
  /// bytes_per_sample over several such passes: the fp32 loss reads its logits three times). 0: half its bytes,
  /// one read and one write. What an executor allocates to run it.
  double tensor_bytes_per_sample = 0;
  /// Bytes its backward moves beyond the forward's twice (the embedding's full gradient table).
  double backward_fixed_bytes = 0;
  double saved_bytes_per_sample = 0; ///< what it keeps for backward without recompute, 16-bit
  /// Short-lived working memory while its backward runs, beyond what it saved (the loss's fp32 logit
  /// gradient; a non-fused attention's score and softmax gradients).
  double transient_bytes_per_sample = 0;
  double fixed_flops_per_sample  = 0; ///< FLOPs of fused attention (its shape is its heads x s x s x head size)
  /// Routed experts that each hold this operator's weights (a linear: m rows per expert and sample, `params`
  /// for all of them). Expert parallelism divides the experts, not the rows: a device holds experts / ep of
  /// them and runs them on the tokens all ep members route there, the same FLOPs as all of them on its own.
  double experts = 0;
  /// Bytes per sample (16-bit) each member of the expert-parallel group sends out in an all-to-all right after
  /// this operator: the tokens to their experts (dispatch) or back (combine). 0: none.
  double all_to_all_bytes_per_sample = 0;
  /// Eager PyTorch (TransformerShape::eager): the kernels this operator's PyTorch expression launches, forward
  /// and backward, where that is more than it is priced as (an op-by-op GeLU is one pass of all its bytes but 10
  /// launches); 0: one launch per priced kernel. Each launch costs the host its dispatch.
  double launches_forward = 0, launches_backward = 0;
  /// Under torch.autocast: bytes per sample its input casts to 16-bit move (each caller casts its own copy), and
  /// per pass the bytes its weight casts move; backward casts the gradients back, the same again. Priced as
  /// one more memory-bound kernel.
  double cast_bytes_per_sample = 0, cast_fixed_bytes = 0;
  /// Eager PyTorch, backward: bytes per sample of autograd's sums of the gradients of a tensor that several
  /// operations read (each further reader's gradient is added into the first's: torch/csrc/autograd/
  /// input_buffer.cpp), two read and one written per sum. Priced as one more memory-bound kernel.
  double gradient_sum_bytes_per_sample = 0;
  /// Eager PyTorch: the share of bytes_per_sample its kernels move on PyTorch's elementwise paths that cannot
  /// load in vectors: operands of mixed dtypes, cast an element at a time (CUDALoops.cuh's
  /// unrolled_elementwise_kernel), and broadcast or strided ones, indexed an element at a time (its generic
  /// elementwise_kernel). The multiprocessors, not the memory, set their pace (costmodel/kernel_time.hpp).
  /// Forward and backward apart: a mixed-dtype sum's gradient is a cast down, which loads in vectors.
  double unvectorized_share_forward = 0, unvectorized_share_backward = 0;
  /// Under selective recompute (models/selective_recompute.hpp) its backward reruns its forward first, rather
  /// than keep what it saves: under Megatron's policy the sequence x sequence part of non-fused attention...
  bool selectively_recomputed = false;
  /// ...and what it keeps for backward then (Megatron's: the Q, K or V the rerun starts from; torchtitan's: a
  /// kept product's output). Unset: saved_bytes_per_sample when it is not rerun, nothing when it is.
  std::optional<double> selective_saved_bytes_per_sample;
  /// A rerun product that reruns only some of the products it calls apart: the output width of those (k of q,
  /// k and v under torchtitan's policy); 0: all of it.
  double selective_rerun_width = 0;
  /// A linear operator that eager PyTorch calls as separate products (q, k and v in most families): the output
  /// width of each, in order; empty: one product of width n.
  std::vector<double> call_widths;
  /// Fused attention: its keys and values over the whole sequence, 16-bit per sample. Under context
  /// parallelism they pass round the group's ring while the kernel runs (ring attention), and their gradients
  /// back round it in backward.
  double key_value_bytes_per_sample = 0;
  /// Fused attention: the kernel the model or plan asked for (the GPU may run another: costmodel/attention_speed),
  /// and whether the framework hands it an explicit mask (a sliding window shorter than the sequence), which
  /// rules out the kernels that take only a causal flag.
  AttentionKernel attention = AttentionKernel::framework_default;
  bool explicit_mask        = false;
  /// Its products run in fp8 (models/fp8.hpp), and the bytes per sample (16-bit in, fp8 out) its input's
  /// quantization moves before the forward product and its output gradient's before the backward's.
  bool fp8 = false;
  double quantize_bytes_per_sample = 0, quantize_backward_bytes_per_sample = 0;

  bool operator==(const Operator&) const = default;

  /// Forward FLOPs on one sample, whole (before any tensor-parallel split).
  double flops_per_sample() const;
  /// What a selective backward reruns of it: itself, or its products of selective_rerun_width.
  Operator selective_rerun() const;
  /// Of its backward's FLOPs, the weight gradient's (a linear operator's: its forward's again), which a
  /// zero-bubble schedule runs apart from the rest.
  double weight_gradient_flops_per_sample() const
  {
    return kind == OperatorKind::linear ? flops_per_sample() : 0;
  }
  /// The factor tp divides this operator's work and bytes by: all but the replicated ones, and those too under
  /// sequence parallelism (they run on 1/tp of the sequence).
  double tensor_parallel_divisor(int tp, bool sequence_parallel = false) const
  {
    return split == TensorSplit::replicated && !sequence_parallel ? 1.0 : static_cast<double>(tp);
  }
};

/// One kernel an operator launches: what the cost model prices and the executors run.
struct Kernel {
  enum class Kind {
    matmul,          ///< `batch` independent m x k times k x n products
    fused_attention, ///< flash attention over `batch` heads: `flops` of products, `bytes` through memory
    stream,          ///< an elementwise pass reading and writing `bytes` in all
  };
  std::string name; ///< the operator's, with ".dgrad" / ".wgrad" for a product's two backward kernels
  Kind kind = Kind::stream;
  double m = 0, n = 0, k = 0, batch = 1; ///< matmul; fused_attention: m = n = sequence, k = head size
  double flops = 0; ///< matmul and fused attention
  double bytes = 0; ///< 16-bit: operands and result of a matmul, what a stream or fused attention moves
  /// A stream: its largest tensor, 16-bit bytes (Operator::tensor_bytes_per_sample); it moves `bytes` in passes
  /// over tensors this large. 0: bytes / 2.
  double tensor_bytes = 0;
  /// Kernel launches it stands for: more than one where an eager operator's many small kernels are priced as
  /// one pass (Operator::launches_forward). Each pays the device's launch gap and the host's dispatch.
  double launches = 1;
  /// A linear operator's weight gradient: the half of a backward a zero-bubble schedule runs apart (the rest,
  /// input gradients, is what the previous stage waits for).
  bool weight_gradient = false;
  /// A backward pass's kernel: fused attention's backward is its own kernel, at its own efficiency.
  bool backward = false;
  /// A stream PyTorch runs on a path that loads in vectors; false: one element at a time
  /// (Operator::unvectorized_share, and backward's casts of gradients up to fp32).
  bool vectorized = true;
  /// Fused attention: the kernel asked for and whether it is handed an explicit mask (Operator::attention).
  AttentionKernel attention = AttentionKernel::framework_default;
  bool explicit_mask        = false;
  /// A matmul in fp8, at the GPU's fp8 rate (Operator::fp8).
  bool fp8 = false;
};

/// The kernels of one forward (backward = false) or backward pass of `op` over `samples` sequences on one
/// member of a tensor-parallel group of `tp`, with or without sequence parallelism: two per matrix product in
/// backward (the input's gradient, then the weight's or second operand's), one otherwise.
std::vector<Kernel> operator_kernels(const Operator& op, int tp, double samples, bool backward,
                                     bool sequence_parallel = false);

/// The operators of one pass between two of its communications, and the communication that ends them.
struct OperatorGroup {
  std::vector<const Operator*> operators;
  bool all_reduce = false;                ///< a tensor-parallel all-reduce follows...
  double all_reduce_bytes_per_sample = 0; ///< ...of the last operator's output, 16-bit
  double all_to_all_bytes_per_sample = 0; ///< then an expert-parallel all-to-all of this many bytes (0: none)
  /// Under context parallelism: the group is an attention kernel whose keys and values (this many bytes per
  /// sample, whole sequence) pass round the ring while it runs; the next group waits for the ring.
  double key_value_bytes_per_sample = 0;
  /// Its operators' forward FLOPs per sample, whole, and of their backward's the weight gradients'.
  double flops_per_sample                 = 0;
  double weight_gradient_flops_per_sample = 0;

  /// Its share of a layer's forward (`forward_flops`) or, with `input_gradients`, of the backward less the
  /// weight gradients (`layer_weight_flops`, a zero-bubble schedule's first backward step); `equal` when the
  /// layer has none.
  double share(double forward_flops, double layer_weight_flops, bool input_gradients, double equal) const
  {
    const double whole = input_gradients ? 2 * forward_flops - layer_weight_flops : forward_flops;
    const double own   = input_gradients ? 2 * flops_per_sample - weight_gradient_flops_per_sample : flops_per_sample;
    return whole > 0 ? own / whole : equal;
  }
};

/// A layer's forward operators cut where the pass stops to communicate: after each row- or vocabulary-parallel
/// operator when tp > 1 (its all-reduce), after each operator with all-to-all bytes when ep > 1, and before and
/// after fused attention when cp > 1 (its ring). Operators after the last cut join the last group, whose
/// communication then stands for the layer's end, unless that group is an attention beside its ring.
std::vector<OperatorGroup> communication_groups(const std::vector<Operator>& ops, int tp, int ep, int cp = 1);

} // namespace hetsim::models
