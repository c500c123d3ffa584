#include "strategies/plan/framework.hpp"

#include "core/enum_names.hpp"

namespace hetsim::strategies {
namespace {

constexpr EnumNames<Framework, 3> kFrameworkNames{
    {{{Framework::megatron, "megatron"}, {Framework::deepspeed, "deepspeed"}, {Framework::fsdp, "fsdp"}}}};

} // namespace

// Sources: Megatron-LM's DistributedDataParallel (40 M-parameter buckets, overlap_grad_reduce; fp32 gradient
// accumulation and reduction forced with bf16) and its p2p communication (scatter-gather of the boundary over
// the tensor-parallel ranks); DeepSpeed's config defaults (fp32_allreduce false, reduce_bucket_size 5e8
// elements, overlap_comm false) and PipelineEngine (sends every tensor of the boundary tuple, the GPT models'
// attention mask included), and ZeRO-3's fetch of a module's partitioned parameters one tensor at a time, at
// most stage3_prefetch_bucket_size (5e7) parameters ahead;
// PyTorch DDP's bucket_cap_mb of 25 MiB, which FSDP's unsharded parts reduce with; FSDP's one flat parameter
// per wrapped module, with limit_all_gathers keeping the next module's all-gather in flight.
// Modules: DeepSpeed and FSDP wrap the user's model, most often a Hugging Face transformers model, which runs op by
// op in eager PyTorch; FSDP's users (and plain PyTorch's, which a one-device fsdp plan is) train it under
// torch.autocast with fp32 weights (MixedPrecision / AMP), DeepSpeed's bf16 and fp16 engines cast the model to
// 16-bit. A Megatron-DeepSpeed run states "eager_modules": false.
// Memory: a CUDA 12 context with lazily loaded modules takes about 0.5 GiB; NCCL keeps NCCL_BUFFSIZE (4 MiB)
// per channel and direction, 16 channels to two ring peers, per communicator; PyTorch's default cuBLAS
// workspace is 32 MiB (CUBLAS_WORKSPACE_CONFIG :4096:8); the caching allocator's rounding and split blocks
// are taken as 10% of activations.
FrameworkSettings framework_defaults(Framework framework)
{
  FrameworkSettings s;
  s.name = framework;
  switch (framework) {
  case Framework::megatron:
    break;
  case Framework::deepspeed:
    s.bucket_params          = 5e8;
    s.reduce_during_backward = false;
    s.scatter_gather_sends   = false;
    s.partitioned_sends      = true;
    s.blocking_sends         = true;
    s.gather_per_tensor      = true;
    s.prefetch_params        = 5e7;
    s.eager_modules          = true;
    break;
  case Framework::fsdp:
    s.bucket_params             = 0; // bucket_mib, 25 MiB by default
    s.tied_embedding_all_reduce = false; // FSDP does not pipeline
    s.scatter_gather_sends      = false;
    s.eager_modules             = true;
    s.autocast                  = true;
    break;
  }
  return s;
}

bool uses_bf16_optimizer(const FrameworkSettings& settings, Dtype dtype, int zero_stage)
{
  return settings.name == Framework::deepspeed && dtype == Dtype::bf16 && zero_stage <= 1 &&
         settings.fp32_gradient_accumulation.value_or(zero_stage == 0);
}

bool reduces_in_fp32(const FrameworkSettings& settings, Dtype dtype)
{
  if (dtype == Dtype::fp32)
    return true;
  if (settings.fp32_gradient_reduction)
    return *settings.fp32_gradient_reduction;
  return settings.name == Framework::megatron && dtype == Dtype::bf16;
}

models::Workload run_by(const models::Workload& workload, const FrameworkSettings& settings, Dtype dtype)
{
  return models::with_modules(workload, settings.eager_modules, settings.autocast && dtype != Dtype::fp32);
}

std::string_view framework_name(Framework framework)
{
  return kFrameworkNames.name(framework);
}

bool parse_framework(std::string_view name, Framework& out)
{
  return kFrameworkNames.parse(name, out);
}

} // namespace hetsim::strategies
