#include "cli/option_checks.hpp"

#include "core/error.hpp"
#include "sim/report/report_format.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace hetsim::cli {
namespace {

/// The value as a double, or nothing when it is not a number (CLI11's own parse reports that).
std::optional<double> number(const std::string& text)
{
  double value = 0;
  if (!CLI::detail::lexical_cast(text, value))
    return std::nullopt;
  return value;
}

std::string expected_range(double low, double high, bool low_open)
{
  const bool unbounded = high == std::numeric_limits<double>::max();
  if (unbounded)
    return (low_open ? "a number above " : "a number of at least ") + sim::format("%g", low);
  return "a number " + std::string(low_open ? "above " : "from ") + sim::format("%g", low) +
         (low_open ? " and up to " : " to ") + sim::format("%g", high);
}

} // namespace

CLI::Validator finite_in(double low, double high, bool low_open)
{
  const std::string expected = expected_range(low, high, low_open);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto value = number(text);
        const bool inside = value && std::isfinite(*value) && (low_open ? *value > low : *value >= low) &&
                            *value <= high;
        return inside ? "" : "expected " + expected + ", got " + quote(text);
      },
      expected);
}

CLI::Validator positive()
{
  return finite_in(0, std::numeric_limits<double>::max(), true);
}

CLI::Validator non_negative()
{
  return finite_in(0, std::numeric_limits<double>::max());
}

void check_option_values(const CLI::App& app)
{
  for (const CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool numeric = type.find("FLOAT") != std::string::npos || type.find("INT") != std::string::npos;
    for (const std::string& value : option->results()) {
      if (value.empty() && option->get_type_size_max() > 0) // flags take no value
        throw InputError(option->get_name() + ": expected a value, got an empty string");
      if (!numeric)
        continue;
      if (const auto parsed = number(value); parsed && !std::isfinite(*parsed))
        throw InputError(option->get_name() + ": expected a finite number, got " + quote(value));
      if (type.find("UINT") != std::string::npos && value.find('-') != std::string::npos)
        throw InputError(option->get_name() + ": expected a number of at least 0, got " + quote(value));
    }
  }
  for (const CLI::App* command : app.get_subcommands())
    check_option_values(*command);
}

} // namespace hetsim::cli
