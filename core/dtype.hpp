#pragma once
/// Numeric precision of training, which selects the GPU peak and the bytes per element.

#include <string>
#include <string_view>

namespace hetsim {

enum class Dtype { fp16, bf16, fp32 };

/// Bytes per element of activations, gradients and communicated parameters.
int dtype_bytes(Dtype dtype);
std::string_view dtype_name(Dtype dtype);
/// Parses "fp16", "bf16" or "fp32"; returns false for anything else.
bool parse_dtype(std::string_view name, Dtype& out);

} // namespace hetsim
