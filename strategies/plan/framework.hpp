#pragma once
/// The training framework a plan runs under, and what it does beyond the plan's degrees: the bytes its gradient
/// reduction and pipeline sends move, when it reduces, and the memory it holds. Each setting defaults by
/// framework and can be overridden in the plan file (docs/inputs.md, "Frameworks").

#include "core/dtype.hpp"
#include "core/software_release.hpp"
#include "models/workload.hpp"

#include <optional>
#include <string_view>

namespace hetsim::strategies {

/// megatron_deepspeed: Megatron-DeepSpeed, Megatron-LM's model code (tensor parallelism, fused kernels) trained by
/// DeepSpeed's engine (its gradient reduction, ZeRO and optimizers, and its PipelineEngine with pp > 1).
enum class Framework { megatron, deepspeed, fsdp, megatron_deepspeed };

struct FrameworkSettings {
  Framework name = Framework::megatron;
  /// Gradients are reduced in fp32 whatever the training dtype (DeepSpeed `fp32_allreduce`). Unset: the
  /// framework's default for the plan's dtype (Megatron-LM with bf16 accumulates and reduces in fp32).
  std::optional<bool> fp32_gradient_reduction;
  /// Gradient buckets (ZeRO 0-2) of this many parameters; 0 keeps a size in bytes (bucket_mib).
  double bucket_params = 40e6;
  /// Buckets are reduced as soon as they fill, overlapping the rest of the backward pass; otherwise all of
  /// them once the backward pass ends (DeepSpeed's `overlap_comm: false`).
  bool reduce_during_backward = true;
  /// Only the first pipeline stage's first chunk splits its gradients in buckets, and only while reducing during
  /// the backward pass; every other chunk reduces in one bucket once its last backward ends (Megatron-LM: the
  /// later stages' reduction is off the critical path). Otherwise every chunk is bucketed.
  bool buckets_first_chunk_only = true;
  /// With a tied embedding and pipelining, the first and last stages all-reduce the embedding's gradient.
  bool tied_embedding_all_reduce = true;
  /// Each tensor-parallel rank sends 1/tp of the boundary activation, the sequence parallelism Megatron-LM's
  /// export turns on, and plans split their tensor-parallel activations likewise unless they say otherwise
  /// (Plan::sequence_parallel); otherwise the whole boundary (boundary_bytes).
  bool scatter_gather_sends = true;
  /// Forward sends carry the s x s attention mask beside the activation, as fp16 (DeepSpeed's pipeline engine with
  /// a model that passes its mask along, as the GPT models on DeepSpeed do); otherwise the mask is made or cached
  /// on every stage (Megatron-LM, and Megatron-DeepSpeed's GPTModelPipe, which keeps it in args.attn_mask).
  bool sends_attention_mask = false;
  /// With tensor parallelism, each tensor-parallel rank sends 1/tp of the boundary activation and of its
  /// gradient, which the receiver all-gathers over its group (DeepSpeed's pipe_partitioned and grad_partitioned).
  bool partitioned_sends = false;
  /// A pipeline send holds the sending device's compute until it is done (DeepSpeed's pipeline engine sends
  /// on the compute stream with blocking torch.distributed.send); otherwise the next step overlaps it
  /// (Megatron's batched isend/irecv).
  bool blocking_sends = false;
  /// ZeRO-3 gathers and reduce-scatters each parameter tensor with a call of its own (DeepSpeed fetches each
  /// module's parameters in a call, a leaf module's weight and bias together: one per tensor is its upper bound);
  /// otherwise a layer's parameters go in one call (FSDP's flat parameter per wrapped block). Each call pays the
  /// collective library's latency over the whole group.
  bool gather_per_tensor = false;
  /// ZeRO-3 gathers run ahead of the compute by at most this many parameters (DeepSpeed's
  /// stage3_prefetch_bucket_size): a layer larger than that is gathered only once the previous one is done.
  /// 0: one layer ahead, whatever its size (FSDP's backward prefetch of the next block).
  double prefetch_params = 0;
  /// ZeRO-3 leaves parameter tensors of fewer elements than this whole on every rank: they are neither gathered
  /// nor counted among a layer's calls (DeepSpeed's stage3_param_persistence_threshold). 0: every tensor.
  double persistence_threshold = 0;
  /// With full recompute, ZeRO-3 keeps a tensor gathered for a layer's recompute until its backward only while
  /// fewer than this many parameters are used between the two (the rest of the layer's recompute, then the
  /// backward of the modules after it); otherwise it releases the tensor and gathers it again (DeepSpeed's
  /// stage3_max_reuse_distance, whose 0 regathers every one; zero3_backward_regather). Unset: kept, as FSDP gathers
  /// a block once for its recompute and backward. Not modelled: without recompute the same rule keeps the last
  /// layers' forward gathers for their backward.
  std::optional<double> max_reuse_distance;
  /// The DeepSpeed release the run trains with; not given: one that gathers through flat tensors (0.6 and later).
  /// Before 0.6, ZeRO-3 gathers and reduce-scatters each tensor through torch.distributed's list API
  /// (zero3_list_collectives, costmodel/list_collectives.hpp).
  SoftwareRelease deepspeed;
  /// The model runs as Hugging Face's modules in eager PyTorch, op by op (models::TransformerShape::eager):
  /// what a user of FSDP, DeepSpeed or plain PyTorch trains. Otherwise as Megatron-LM's fused kernels, with the
  /// vocabulary padded to a multiple of 128 (--make-vocab-size-divisible-by).
  bool eager_modules = false;
  /// fp32 weights, gradients and master copy with the products in 16-bit under torch.autocast (PyTorch AMP): the
  /// residual stream, norms and autocast's fp32 operations stay fp32 (models::TransformerShape::autocast).
  /// Otherwise the model itself is 16-bit, with an fp32 master copy in the optimizer (Megatron-LM, DeepSpeed,
  /// FSDP's MixedPrecision). A plain PyTorch loop trains under autocast; FSDP's users set MixedPrecision.
  bool autocast = false;
  /// bf16 gradients are added, after every micro-batch's backward, into a full fp32 copy that the data-parallel
  /// reduction and the step read, and the fp32 master weights and optimizer states are sharded over the
  /// data-parallel ranks even without ZeRO (DeepSpeed's BF16_Optimizer, chosen by data_types.grad_accum_dtype).
  /// Unset: DeepSpeed's default, fp32 accumulation with bf16 and ZeRO off.
  std::optional<bool> fp32_gradient_accumulation;
  /// What a block keeps and reruns when the plan asks for selective recompute: Megatron-LM's core attention
  /// (models::SelectivePolicy::core_attention), or torchtitan's op-level policy (every_other_product), the
  /// selective checkpointing an FSDP2 trainer offers.
  models::SelectivePolicy selective = models::SelectivePolicy::core_attention;
  /// The attention kernel the plan runs (models/attention_kernel.hpp), over the model file's; unset: the model
  /// file's, or the framework's default (SDPA under Hugging Face modules, Transformer Engine's under Megatron-LM).
  std::optional<models::AttentionKernel> attention;
  /// The blocks' linear products in fp8 under this recipe, as Transformer Engine runs them (models/fp8.hpp): a
  /// plan's "dtype": "fp8" with its "fp8_recipe", the rest of the model in bf16. none: the plan's dtype throughout.
  models::Fp8Recipe fp8 = models::Fp8Recipe::none;
  /// The fp8 products' weights are kept in fp8 alone, with no 16-bit copy, and the distributed optimizer gathers
  /// them in fp8 after each step (Megatron-LM's --fp8-param-gather, arguments.py:2016 at d98e8a6: "Keep the compute
  /// param in fp8 ... and perform the param all-gather in fp8"; only with the distributed optimizer, l.1096). The
  /// fp32 master copy stays the optimizer's.
  bool fp8_param_gather = false;
  /// Memory held beyond the model: CUDA context and loaded kernels, NCCL's buffers per communicator the device
  /// belongs to, the cuBLAS workspace, and the caching allocator's slack as a fraction of activations. NCCL's
  /// buffers, unless given, are what NCCL allocates on the cluster (costmodel/nccl_memory.hpp).
  double cuda_context_bytes         = 0.5 * (1 << 30);
  std::optional<double> communicator_buffer_bytes;
  double gemm_workspace_bytes       = 32.0 * (1 << 20);
  double allocator_fragmentation    = 0.1;
  /// The PyTorch release the run trains with, whose CUDA libraries and kernels set what a GPU reaches; not
  /// given: the release the GPU's measured constants come from (costmodel/prediction_band.cpp).
  SoftwareRelease pytorch;

  bool operator==(const FrameworkSettings&) const = default;
};

/// Whether `framework` trains with DeepSpeed's engine: its gradient reduction, ZeRO, BF16_Optimizer and fp16
/// optimizer, its checkpoints (DeepSpeed, and Megatron-DeepSpeed, which hands Megatron's model to it).
bool runs_deepspeed_engine(Framework framework);

/// The settings `framework` runs with by default.
FrameworkSettings framework_defaults(Framework framework);
/// Whether gradients are reduced in fp32 when training in `dtype`.
bool reduces_in_fp32(const FrameworkSettings& settings, Dtype dtype);

/// Whether the plan's framework runs DeepSpeed's BF16_Optimizer (FrameworkSettings::fp32_gradient_accumulation):
/// DeepSpeed's engine, bf16, ZeRO 0-1 and fp32 accumulation asked for or, at ZeRO 0, left to DeepSpeed's default.
bool uses_bf16_optimizer(const FrameworkSettings& settings, Dtype dtype, int zero_stage);

/// Bytes per parameter the BF16_Optimizer's accumulation moves after each micro-batch's backward: its
/// `hp_grad.add_(lp_grad.to(fp32))` reads the bf16 gradient (2) and writes its fp32 cast (4), reads that and the
/// fp32 accumulator (8) and writes the sum (4), and `clear_lp_grads` zeroes the bf16 gradient (2).
inline constexpr double kBf16AccumulationBytesPerParam = 20;
/// Kernels it launches per parameter tensor: the cast and the add.
inline constexpr double kBf16AccumulationLaunchesPerTensor = 2;

/// Whether ZeRO-3 under `settings` calls each gather and reduce-scatter through torch.distributed's list API with a
/// device synchronize before each gather: DeepSpeed's engine at a release before 0.6 (costmodel/list_collectives.hpp).
bool zero3_list_collectives(const FrameworkSettings& settings);

/// `workload` as `settings` runs it in `dtype`: Hugging Face's eager modules or Megatron-LM's fused ones, under
/// autocast or not (fp32 training has nothing to cast).
models::Workload run_by(const models::Workload& workload, const FrameworkSettings& settings, Dtype dtype);
/// The fused attention kernel a framework runs when neither the model file nor the plan names one: SDPA under
/// Hugging Face modules (DeepSpeed, FSDP), Transformer Engine's under Megatron-LM, FlashAttention 2 under
/// Megatron-DeepSpeed (whose export writes --use-flash-attn-v2).
models::AttentionKernel default_attention(Framework framework);

/// "megatron", "deepspeed", "fsdp" or "megatron-deepspeed", as in plan files.
std::string_view framework_name(Framework framework);
bool parse_framework(std::string_view name, Framework& out);
/// "megatron, deepspeed, fsdp or megatron-deepspeed", for messages.
std::string_view framework_choices();

} // namespace hetsim::strategies
