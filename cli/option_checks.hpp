#pragma once
/// Checks on command-line values that CLI11's own validators let through: `nan` and `inf` pass its ranges
/// (every comparison with NaN is false), `-1` becomes 2^64 - 1 in an unsigned option, an empty string passes as a
/// file name, and its range messages print DBL_MAX in 309 digits.

#include <CLI/CLI.hpp>

namespace hetsim::cli {

/// A finite number in [low, high] (above `low` when `low_open`), refused with a message such as "expected a
/// number above 0, got 'nan'".
CLI::Validator finite_in(double low, double high, bool low_open = false);
/// A finite number above 0.
CLI::Validator positive();
/// A finite number of at least 0.
CLI::Validator non_negative();

/// After parsing, over every option of the command line: throws InputError for an empty value ("--report ''"),
/// a number that is not finite, or a negative value of an unsigned option.
void check_option_values(const CLI::App& app);

} // namespace hetsim::cli
