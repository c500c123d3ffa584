#include "core/dtype.hpp"

#include "core/enum_names.hpp"

namespace hetsim {
namespace {

constexpr EnumNames<Dtype, 3> kNames{{{{Dtype::fp16, "fp16"}, {Dtype::bf16, "bf16"}, {Dtype::fp32, "fp32"}}}};

} // namespace

int dtype_bytes(Dtype dtype)
{
  return dtype == Dtype::fp32 ? 4 : 2;
}

std::string_view dtype_name(Dtype dtype)
{
  return kNames.name(dtype);
}

bool parse_dtype(std::string_view name, Dtype& out)
{
  return kNames.parse(name, out);
}

} // namespace hetsim
