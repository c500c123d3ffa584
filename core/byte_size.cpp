#include "core/byte_size.hpp"

#include "core/error.hpp"

#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace hetsim {

double parse_byte_size(std::string_view text, std::string_view option, bool allow_zero)
{
  static constexpr std::array<std::pair<std::string_view, double>, 9> kUnits = {{{"B", 1.0},
                                                                                 {"KiB", 1024.0},
                                                                                 {"MiB", 1048576.0},
                                                                                 {"GiB", 1073741824.0},
                                                                                 {"TiB", 1099511627776.0},
                                                                                 {"KB", 1e3},
                                                                                 {"MB", 1e6},
                                                                                 {"GB", 1e9},
                                                                                 {"TB", 1e12}}};
  auto fail                                                                  = [&] {
    return InputError(std::string(option) + ": expected a size with a unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), " +
                                                                                       "e.g. 30GiB or 16GB, got " + quote(text));
  };
  const std::size_t unit_at = text.find_first_not_of("0123456789.eE+- ");
  if (unit_at == std::string_view::npos || unit_at == 0)
    throw fail();
  std::string number(text.substr(0, unit_at));
  while (!number.empty() && number.back() == ' ')
    number.pop_back();
  const std::string_view unit = text.substr(unit_at);
  double value                = 0;
  std::size_t used            = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    throw fail();
  }
  if (used != number.size() || !std::isfinite(value) || value < 0 || (value == 0 && !allow_zero))
    throw fail();
  for (const auto& [name, bytes] : kUnits)
    if (unit == name)
      return value * bytes;
  throw fail();
}

} // namespace hetsim
