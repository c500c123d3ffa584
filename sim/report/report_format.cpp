#include "sim/report/report_format.hpp"

#include "core/units.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace hetsim::sim {
namespace {

std::string pad(const std::string& text, std::size_t width, bool right_align)
{
  if (text.size() >= width)
    return text;
  const std::string fill(width - text.size(), ' ');
  return right_align ? fill + text : text + fill;
}

} // namespace

std::string format(const char* pattern, double value)
{
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string with_commas(double value)
{
  std::string digits = format("%.0f", value);
  std::string out;
  const std::size_t lead = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    out += digits[i];
    const std::size_t left = digits.size() - i - 1;
    if (i >= lead && left > 0 && left % 3 == 0)
      out += ',';
  }
  return out;
}

void print_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out, bool numbers)
{
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths.resize(std::max(widths.size(), row.size()), 0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0)
        line += "  ";
      line += pad(row[c], widths[c], numbers && c > 0);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out << "  " << line << '\n';
  }
}

std::string percent(double fraction)
{
  return format("%.1f%%", 100 * fraction);
}

std::string seconds(double s)
{
  return s == 0 ? "0" : format("%#.4g", s);
}

std::string gib(double bytes)
{
  return format("%.2f", bytes / units::kGiB);
}

} // namespace hetsim::sim
