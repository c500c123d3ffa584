#pragma once
/// Fused causal attention as PyTorch's scaled_dot_product_attention runs it on an NVIDIA GPU: cuDNN's flash
/// graphs (forward with its log-sum-exp, backward from it), built through the cuDNN frontend. PyTorch 2.11 on
/// the H100 ran these for Hugging Face GPT-2 medium (cudnn_generated_fort_native_sdpa_sm90_flash_fprop and
/// _bprop, with compute_dot_do_o and convert_dq_to_16bits, in tests/data/h100's profiler traces); the executor
/// runs the same graphs, without dropout.
///
/// A graph is built once per shape, before any task is timed (prepare), and run on the caller's stream over
/// tensors laid out in one block of device memory (AttentionTensors' order).

#include "exec/kernel_products.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace hetsim::exec {

class CudnnAttention {
public:
  /// `bf16` or fp16 operands; fp32 has no flash graph in cuDNN.
  explicit CudnnAttention(bool bf16);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&)            = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  /// Builds the graph of `tensors` if not built yet. False, with the reason in `why`, when cuDNN has no engine
  /// for it on this GPU (the executor then emulates the kernel with products).
  bool build(const AttentionTensors& tensors, std::string& why);
  /// Bytes of cuDNN workspace a built graph asks for beyond the tensors.
  std::size_t workspace_bytes(const AttentionTensors& tensors);
  /// Runs the built graph of `tensors` on `stream` over `memory`: the tensors, 16-bit elements, in order (Q, K,
  /// V, then O forward; Q, K, V, O, dO, dQ, dK, dV backward), the fp32 log-sum-exp after them, then the workspace.
  void run(const AttentionTensors& tensors, cudaStream_t stream, void* memory);

private:
  struct Graphs;
  using Key = std::tuple<bool, long, long, long>;
  static Key key(const AttentionTensors& t) { return {t.backward, t.heads, t.sequence, t.head_size}; }

  bool bf16_;
  std::unique_ptr<Graphs> graphs_;
};

} // namespace hetsim::exec
