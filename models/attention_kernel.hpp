#pragma once
/// The attention kernel a software stack runs: which implementation computes a block's scores, softmax and
/// context. The model or plan file names it ("attention": "flash2"); left out, the framework's default stands.
/// Which GPUs each one runs on and how fast it is there: costmodel/attention_speed.hpp.

#include <optional>
#include <string>
#include <string_view>

namespace hetsim::models {

enum class AttentionKernel {
  framework_default, ///< not given: sdpa under Hugging Face modules, te_fused under Megatron-LM's
  sdpa,          ///< PyTorch's scaled_dot_product_attention, which picks cudnn, flash2 or mem_efficient per call
  flash2,        ///< FlashAttention 2 (flash-attn 2.x, or PyTorch's built-in copy of it)
  flash3,        ///< FlashAttention 3 (flash-attn's hopper/ kernels)
  cudnn,         ///< cuDNN's fused flash attention (through SDPA or Transformer Engine)
  mem_efficient, ///< the memory-efficient kernel (xformers' CUTLASS kernels, SDPA's EFFICIENT_ATTENTION)
  triton,        ///< FlashAttention's Triton kernel (flash_attn_triton.py; MosaicML's attn_impl "triton")
  te_fused,      ///< Transformer Engine's DotProductAttention, which picks flash-attn or cuDNN per GPU
  eager,         ///< products, softmax and dropout op by op (Hugging Face "eager", SDPA's math backend)
  fused_softmax, ///< Megatron-LM's scale-mask-softmax kernel between two batched products, no flash
};

/// The name a file gives it ("flash2"; framework_default is "default").
std::string_view attention_kernel_name(AttentionKernel kernel);
/// The kernel a file names, or nullopt.
std::optional<AttentionKernel> parse_attention_kernel(std::string_view name);
/// The names a file may give, comma-separated, for error messages.
std::string attention_kernel_names();
/// Whether it keeps the s x s scores and probabilities for the backward pass, as a non-fused attention does.
bool keeps_scores(AttentionKernel kernel);
/// Whether it takes attention sinks (gpt-oss's learned logit per head): an unfused attention does, and
/// FlashAttention 3's kernel with sinks; SDPA and FlashAttention 2 have none. The default is the model's own.
bool takes_attention_sinks(AttentionKernel kernel);
/// What a model with sinks may run, for messages: "\"eager\" or \"flash3\" (...)".
std::string attention_sinks_kernels();

} // namespace hetsim::models
