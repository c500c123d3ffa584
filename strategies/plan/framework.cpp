#include "strategies/plan/framework.hpp"

#include "core/enum_names.hpp"

namespace hetsim::strategies {
namespace {

constexpr EnumNames<Framework, 4> kFrameworkNames{{{{Framework::megatron, "megatron"},
                                                    {Framework::deepspeed, "deepspeed"},
                                                    {Framework::fsdp, "fsdp"},
                                                    {Framework::megatron_deepspeed, "megatron-deepspeed"}}}};

} // namespace

// Each default's source, a line of the framework's code or a measurement, is in framework_sources.cpp (and
// `hetsim inspect frameworks`); its tests hold the two together.
FrameworkSettings framework_defaults(Framework framework)
{
  FrameworkSettings s;
  s.name = framework;
  switch (framework) {
  case Framework::megatron:
    break;
  case Framework::deepspeed:
    s.bucket_params            = 5e8;
    s.reduce_during_backward   = false;
    s.buckets_first_chunk_only = false;
    s.scatter_gather_sends     = false;
    s.partitioned_sends        = true;
    s.blocking_sends           = true;
    s.gather_per_tensor        = true;
    s.prefetch_params          = 5e7;
    s.persistence_threshold    = 1e5;
    s.max_reuse_distance       = 1e9;
    s.eager_modules            = true;
    s.sends_attention_mask     = true;
    break;
  case Framework::megatron_deepspeed: // DeepSpeed's engine and pipeline engine, Megatron-LM's model
    s                      = framework_defaults(Framework::deepspeed);
    s.name                 = framework;
    s.eager_modules        = false;
    s.sends_attention_mask = false;
    break;
  case Framework::fsdp:
    s.bucket_params             = 0; // bucket_mib, 25 MiB by default
    s.buckets_first_chunk_only  = false;
    s.tied_embedding_all_reduce = false; // FSDP does not pipeline
    s.selective                 = models::SelectivePolicy::every_other_product;
    s.scatter_gather_sends      = false;
    s.eager_modules             = true;
    break;
  }
  return s;
}

bool runs_deepspeed_engine(Framework framework)
{
  return framework == Framework::deepspeed || framework == Framework::megatron_deepspeed;
}

bool uses_bf16_optimizer(const FrameworkSettings& settings, Dtype dtype, int zero_stage)
{
  return runs_deepspeed_engine(settings.name) && dtype == Dtype::bf16 && zero_stage <= 1 &&
         settings.fp32_gradient_accumulation.value_or(zero_stage == 0);
}

bool zero3_list_collectives(const FrameworkSettings& settings)
{
  // DeepSpeed 0.6.0 (March 2022) fetches a module's parameters in one flat all_gather_coalesced and
  // reduce-scatters through reduce_scatter_coalesced (stage3.py); every release before gathers tensor by tensor.
  constexpr SoftwareRelease kFlatCollectivesSince{0, 6};
  return runs_deepspeed_engine(settings.name) && settings.deepspeed.given() &&
         settings.deepspeed < kFlatCollectivesSince;
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
  const models::Workload run = models::with_fp8(
      models::with_selective_policy(
          models::with_modules(workload, settings.eager_modules, settings.autocast && dtype != Dtype::fp32),
          settings.selective),
      settings.fp8, "plan dtype \"fp8\"");
  if (settings.attention)
    return models::with_attention(run, *settings.attention, "plan framework.attention");
  // A family trained with a fused kernel and none named: the framework's own. One that keeps its scores stays so.
  if (run.shape && run.shape->flash_attention && run.shape->attention == models::AttentionKernel::framework_default)
    return models::with_attention(run, default_attention(settings.name), "framework");
  return run;
}

models::AttentionKernel default_attention(Framework framework)
{
  switch (framework) {
  case Framework::megatron: return models::AttentionKernel::te_fused;
  case Framework::megatron_deepspeed: return models::AttentionKernel::flash2;
  case Framework::deepspeed:
  case Framework::fsdp: return models::AttentionKernel::sdpa;
  }
  return models::AttentionKernel::sdpa;
}

std::string_view framework_name(Framework framework)
{
  return kFrameworkNames.name(framework);
}

bool parse_framework(std::string_view name, Framework& out)
{
  return kFrameworkNames.parse(name, out);
}

std::string_view framework_choices()
{
  return "megatron, deepspeed, fsdp or megatron-deepspeed";
}

} // namespace hetsim::strategies
