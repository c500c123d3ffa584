#include "core/dtype.hpp"

namespace hetsim {

int dtype_bytes(Dtype dtype)
{
  return dtype == Dtype::fp32 ? 4 : 2;
}

std::string_view dtype_name(Dtype dtype)
{
  switch (dtype) {
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp32:
      return "fp32";
  }
  return "fp16";
}

bool parse_dtype(std::string_view name, Dtype& out)
{
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp32})
    if (dtype_name(d) == name) {
      out = d;
      return true;
    }
  return false;
}

} // namespace hetsim
