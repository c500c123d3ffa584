#include "models/loss_kernel.hpp"

#include "core/enum_names.hpp"

namespace hetsim::models {
namespace {

constexpr EnumNames<LossKernel, 5> kNames{{{{LossKernel::framework_default, "default"},
                                            {LossKernel::eager, "eager"},
                                            {LossKernel::megatron, "megatron"},
                                            {LossKernel::fused, "fused"},
                                            {LossKernel::fused_linear, "fused_linear"}}}};

} // namespace

std::string_view loss_kernel_name(LossKernel kernel)
{
  return kNames.name(kernel);
}

std::optional<LossKernel> parse_loss_kernel(std::string_view name)
{
  LossKernel kernel{};
  return kNames.parse(name, kernel) ? std::optional(kernel) : std::nullopt;
}

std::string loss_kernel_names()
{
  return kNames.joined();
}

} // namespace hetsim::models
