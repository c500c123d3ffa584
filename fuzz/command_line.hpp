#pragma once
/// The command line as a fuzzed input: argument vectors of every subcommand (a JSON array of strings), mutated
/// with the values a careless or hostile user types (nan, -1, "", control characters, /dev/zero, a pipe no one
/// writes to, an input named as an output, one file for two outputs) and run as the `hetsim` binary, a child
/// process whose address space is capped at 4 GiB and whose time is bounded.
///
/// The contract: exit 0 (or 1, a gate of `validate`), or exit 2 whose last line is one "hetsim: ..." line; never
/// a signal, an internal error (exit 3), a hang, or an input file of the command replaced. Arguments written
/// "@NAME" name files of the work folder, where the inputs are fresh copies for every command.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace hetsim::fuzz {

/// Where command lines run: the `hetsim` binary, the repository (for the inputs copied), and the work folder.
struct CommandContext {
  std::filesystem::path cli;
  std::filesystem::path root;
  std::filesystem::path work;
  double time_limit_s = 60; ///< past it, a command counts as a hang
};

/// A mutation of an argument vector written as a JSON array of strings.
std::string mutate_command_line(const std::string& text, std::mt19937_64& random);

/// Why running `argv_json` breaks the contract, or nothing; `refused` tells exit 2 from exit 0 or 1.
std::optional<std::string> command_line_violation(const CommandContext& context, const std::string& argv_json,
                                                  bool& refused);

} // namespace hetsim::fuzz
