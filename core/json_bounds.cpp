#include "core/json_bounds.hpp"

#include <cstdio>

namespace hetsim {

double bounded_number(const JsonInput& value, double most, bool positive)
{
  char bound[32];
  std::snprintf(bound, sizeof bound, "%g", most); // 4096, 1e+18
  const std::string expected =
      std::string(positive ? "a positive number" : "a non-negative number") + " of at most " + bound;
  if (!value.is_number())
    value.fail(expected);
  const double number = value.number();
  if (!(positive ? number > 0 : number >= 0) || !(number <= most))
    value.fail(expected);
  return number;
}

} // namespace hetsim
