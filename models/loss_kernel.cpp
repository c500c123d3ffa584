#include "models/loss_kernel.hpp"

#include <array>
#include <utility>

namespace hetsim::models {
namespace {

constexpr std::array<std::pair<LossKernel, std::string_view>, 5> kNames{{
    {LossKernel::framework_default, "default"},
    {LossKernel::eager, "eager"},
    {LossKernel::megatron, "megatron"},
    {LossKernel::fused, "fused"},
    {LossKernel::fused_linear, "fused_linear"},
}};

} // namespace

std::string_view loss_kernel_name(LossKernel kernel)
{
  for (const auto& [k, name] : kNames)
    if (k == kernel)
      return name;
  return "default";
}

std::optional<LossKernel> parse_loss_kernel(std::string_view name)
{
  for (const auto& [kernel, n] : kNames)
    if (n == name)
      return kernel;
  return std::nullopt;
}

std::string loss_kernel_names()
{
  std::string names;
  for (const auto& [kernel, name] : kNames)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

} // namespace hetsim::models
