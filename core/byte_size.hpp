#pragma once
/// Memory sizes given on the command line: a number and its unit ("30GiB", "16 GB", "512MiB"). A bare number is
/// refused: 30 could mean bytes or GiB, and guessing wrong moves the answer by a factor of a billion.

#include <string_view>

namespace hetsim {

/// Bytes of `text`; units B, KiB, MiB, GiB, TiB (powers of 1024) and KB, MB, GB, TB (powers of 1000). Throws
/// InputError naming `option` ("--memory-limit: expected a size with a unit, e.g. 30GiB or 16GB, got '30'").
/// Zero ("0GiB") is accepted only when `allow_zero`.
double parse_byte_size(std::string_view text, std::string_view option, bool allow_zero = false);

} // namespace hetsim
