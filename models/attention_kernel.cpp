#include "models/attention_kernel.hpp"

#include <array>
#include <utility>

namespace hetsim::models {
namespace {

constexpr std::array<std::pair<AttentionKernel, std::string_view>, 10> kNames{{
    {AttentionKernel::framework_default, "default"},
    {AttentionKernel::sdpa, "sdpa"},
    {AttentionKernel::flash2, "flash2"},
    {AttentionKernel::flash3, "flash3"},
    {AttentionKernel::cudnn, "cudnn"},
    {AttentionKernel::mem_efficient, "mem_efficient"},
    {AttentionKernel::triton, "triton"},
    {AttentionKernel::te_fused, "te_fused"},
    {AttentionKernel::eager, "eager"},
    {AttentionKernel::fused_softmax, "fused_softmax"},
}};

} // namespace

std::string_view attention_kernel_name(AttentionKernel kernel)
{
  for (const auto& [k, name] : kNames)
    if (k == kernel)
      return name;
  return "default";
}

std::optional<AttentionKernel> parse_attention_kernel(std::string_view name)
{
  for (const auto& [kernel, n] : kNames)
    if (n == name)
      return kernel;
  return std::nullopt;
}

std::string attention_kernel_names()
{
  std::string names;
  for (const auto& [kernel, name] : kNames)
    if (kernel != AttentionKernel::framework_default)
      names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool keeps_scores(AttentionKernel kernel)
{
  return kernel == AttentionKernel::eager || kernel == AttentionKernel::fused_softmax;
}

} // namespace hetsim::models
