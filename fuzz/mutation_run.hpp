#pragma once
/// A seeded mutation run over the input kinds: each kind's special files (/dev/zero, /dev/null, a directory, a
/// pipe no one writes to, a sparse file of 3 GB) and regression inputs as they are, then mutations of its seeds,
/// each written to a file and used as the commands use it (input_kind.hpp); command lines run as the binary
/// (command_line.hpp). The contract checked for
/// every input: it is accepted, or refused with one line that names the file (an InputError, or an
/// InfeasiblePlan for a plan that does not fit); anything else is a failure, and the input is kept.

#include "fuzz/input_kind.hpp"

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetsim::fuzz {

struct KindCounts {
  std::size_t inputs   = 0;
  std::size_t accepted = 0; ///< what the CLI ends with exit 0
  std::size_t refused  = 0; ///< exit 2: an input error naming the file, or a plan that does not fit
  std::size_t failures = 0; ///< anything else
};

struct FuzzOptions {
  InputContext context;
  std::vector<InputKind> kinds;
  std::size_t inputs_per_kind = 2000; ///< mutated inputs per kind, after the regression inputs
  std::size_t command_lines   = 200;  ///< mutated command lines (each a process, seconds at most)
  std::uint64_t seed          = 1;
  std::filesystem::path scratch;       ///< where each input is written before it is used
  std::filesystem::path failures_dir;  ///< failing inputs are copied here as <kind>/<n>.json; empty: not kept
  std::ostream* log           = nullptr; ///< one line per failure and per finished kind
};

struct FuzzFailure {
  InputKind kind;
  std::string input; ///< the file's text
  std::string what;  ///< why it broke the contract
};

struct FuzzReport {
  std::map<InputKind, KindCounts> counts;
  std::vector<FuzzFailure> failures;
};

/// Why using `file` as `kind` breaks the contract, or nothing when it keeps it; `refused` tells which way it
/// kept it.
std::optional<std::string> contract_violation(const InputContext& context, InputKind kind, const std::string& file,
                                              bool& refused);

FuzzReport run_mutations(const FuzzOptions& options);

} // namespace hetsim::fuzz
