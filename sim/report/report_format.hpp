#pragma once
/// How the terminal reports print numbers and tables.

#include <iosfwd>
#include <string>
#include <vector>

namespace hetsim::sim {

/// printf of one number.
std::string format(const char* pattern, double value);
/// 12345678 -> "12,345,678".
std::string with_commas(double value);
/// Rows of strings printed as aligned columns, indented by two spaces: the first column left-aligned, the others
/// right-aligned (numbers) or left-aligned (text).
void print_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out, bool numbers = true);
/// 0.123 -> "12.3%".
std::string percent(double fraction);
/// Four significant digits, trailing zeros kept so that columns line up: "5.240", "128.3", "0.0001234".
std::string seconds(double s);
/// Bytes in GiB, two decimals.
std::string gib(double bytes);

} // namespace hetsim::sim
