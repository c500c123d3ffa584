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

} // namespace hetsim::models
