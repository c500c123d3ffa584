#pragma once
/// How an executor runs a task's kernels (strategies/lowering/task_kernels.hpp): the matrix products and
/// passes over memory behind each, shared by every executor so that they all run the same work.

#include "models/operator.hpp"
#include "strategies/lowering/schedule.hpp"

#include <cstddef>
#include <vector>

namespace hetsim::exec {

/// `count` independent row-major (m x k) * (k x n) products, one after another in memory.
struct Product {
  long m = 1, n = 1, k = 1, count = 1;
  double flops() const
  {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
           static_cast<double>(count);
  }
};

/// The products that run a matmul or fused-attention kernel; none for a stream. Flash attention runs, per head,
/// blocks of 128 queries against all keys: two products in the forward (scores, context), five in the
/// backward, each over every head's block at once and one block after another (`count` is the heads), so
/// that no s x s matrix is ever whole: the operands are one block's.
std::vector<Product> kernel_products(const models::Kernel& kernel);

/// How an executor runs a stream kernel: copies of `tensor` elements from an input to an output of that size,
/// until `elements` are read (and as many written: its 16-bit bytes are half reads, half writes). A kernel that
/// moves its bytes in several passes over one tensor (the fp32 loss over its logits) touches only that tensor.
struct StreamPasses {
  std::size_t elements = 1; ///< read in all
  std::size_t tensor   = 1; ///< read or written by one copy (the last copy reads what is left)
};
StreamPasses stream_passes(const models::Kernel& kernel);

/// The tensors a framework's fused attention runs on, as PyTorch's SDPA hands them to cuDNN's flash graphs (the
/// kernels the H100 traces show, tests/data/h100): `heads` (the micro-batch's sequences times their heads) of
/// `sequence` x `head_size` each for the queries, keys, values and output, and in the backward the output's
/// gradient and the three input gradients; the fp32 log-sum-exp per head and query; and, in the backward, the
/// fp32 buffers cuDNN's workspace holds (the query gradient's accumulator, which the traces' convert_dq_to_16bits
/// kernel casts, and the row sums of dO * O, compute_dot_do_o's). Keys and values are counted with every query
/// head: an upper bound under grouped-query attention, whose kernel does not say its key-value heads.
struct AttentionTensors {
  long heads = 1, sequence = 1, head_size = 1;
  bool backward = false;

  std::size_t tensor() const { return static_cast<std::size_t>(heads * sequence * head_size); }
  /// fp32 values per head and query, in 16-bit elements.
  std::size_t rows() const { return static_cast<std::size_t>(2 * heads * sequence); }
  /// Q, K, V (and O, dO in backward) and the log-sum-exp: what the kernel reads.
  std::size_t inputs() const { return (backward ? 5 : 3) * tensor() + (backward ? rows() : 0); }
  /// O and the log-sum-exp forward; dQ, dK, dV and cuDNN's fp32 dQ and row sums backward.
  std::size_t outputs() const { return backward ? 3 * tensor() + 2 * tensor() + rows() : tensor() + rows(); }
};
/// A fused-attention kernel's tensors.
AttentionTensors attention_tensors(const models::Kernel& kernel);

/// Elements of the A, B and C operands a kernel runs on: its products' operands one after another, or a
/// stream's input (A) and output (C), one tensor each. A fused attention's are at least its framework tensors
/// (AttentionTensors: inputs in A, outputs in C), whichever way an executor runs it.
struct Operands {
  std::size_t a = 0, b = 0, c = 0;
  std::size_t total() const { return a + b + c; }
};
Operands kernel_operands(const models::Kernel& kernel);

/// Elements an optimizer task updates.
long optimizer_elements(const strategies::Task& task, double scale);

} // namespace hetsim::exec
