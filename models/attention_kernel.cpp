#include "models/attention_kernel.hpp"

#include "core/enum_names.hpp"

namespace hetsim::models {
namespace {

constexpr EnumNames<AttentionKernel, 10> kNames{{{{AttentionKernel::framework_default, "default"},
                                                  {AttentionKernel::sdpa, "sdpa"},
                                                  {AttentionKernel::flash2, "flash2"},
                                                  {AttentionKernel::flash3, "flash3"},
                                                  {AttentionKernel::cudnn, "cudnn"},
                                                  {AttentionKernel::mem_efficient, "mem_efficient"},
                                                  {AttentionKernel::triton, "triton"},
                                                  {AttentionKernel::te_fused, "te_fused"},
                                                  {AttentionKernel::eager, "eager"},
                                                  {AttentionKernel::fused_softmax, "fused_softmax"}}}};

} // namespace

std::string_view attention_kernel_name(AttentionKernel kernel)
{
  return kNames.name(kernel);
}

std::optional<AttentionKernel> parse_attention_kernel(std::string_view name)
{
  AttentionKernel kernel{};
  return kNames.parse(name, kernel) ? std::optional(kernel) : std::nullopt;
}

std::string attention_kernel_names()
{
  return kNames.joined();
}

bool keeps_scores(AttentionKernel kernel)
{
  return kernel == AttentionKernel::eager || kernel == AttentionKernel::fused_softmax;
}

bool takes_attention_sinks(AttentionKernel kernel)
{
  return keeps_scores(kernel) || kernel == AttentionKernel::flash3 || kernel == AttentionKernel::framework_default;
}

std::string attention_sinks_kernels()
{
  return "\"eager\" or \"flash3\" (attention sinks run in Hugging Face's eager attention or FlashAttention 3's "
         "kernel with sinks; SDPA and FlashAttention 2 have none)";
}

} // namespace hetsim::models
