#pragma once
/// The kinds of input file HetSim reads, and for each one what the commands do with it: the loader that parses
/// it and the first work that trusts what was parsed (a plan is lowered and estimated, a cluster becomes a
/// SimGrid platform). A mutated file must end in what the CLI turns into exit 0 or exit 2: nothing thrown, or an
/// InputError (or InfeasiblePlan) on one line naming the file.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hetsim::fuzz {

enum class InputKind {
  cluster,
  model,
  plan,
  sweep,
  calibration,
  layer_profile,
  device_profile,
  trace,         ///< a trace HetSim wrote (simulate, run)
  export_plan,   ///< "export": a plan written out for every framework (hetsim export)
  pytorch_trace, ///< a PyTorch profiler trace (hetsim calibrate --trace, validate)
  failures,      ///< a failure what-if file (simulate and search --failures)
  slowdowns,     ///< stragglers and slow links (simulate --slowdowns)
  jobs,          ///< jobs sharing a cluster (simulate --jobs, sweep's "beside")
  command_line,  ///< the `hetsim` binary's arguments, every subcommand (command_line.hpp)
};

std::span<const InputKind> all_input_kinds();
std::string_view input_kind_name(InputKind kind);
/// Throws InputError for an unknown name.
InputKind parse_input_kind(std::string_view name);

/// Where the seeds and the fixed inputs a kind is read against live (the repository root), and for command lines
/// the `hetsim` binary and the folder they run in.
struct InputContext {
  std::filesystem::path root;
  std::filesystem::path cli;
  std::filesystem::path work;
};

/// The valid files a kind's mutations start from.
std::vector<std::filesystem::path> seed_files(const InputContext& context, InputKind kind);

/// Inputs of `kind` that once broke the contract (fuzz/regressions/<kind>/), used as they are before any
/// mutation.
std::vector<std::filesystem::path> regression_files(const InputContext& context, InputKind kind);

/// Why an error message about `file` breaks the contract, or nothing: more than one line, or, when it must,
/// not naming the file.
std::optional<std::string> message_violation(const std::string& what, const std::string& file, bool must_name_file);

/// Reads `file` as `kind` and uses it as the commands would. Throws what the commands would throw.
void use_input(const InputContext& context, InputKind kind, const std::string& file);

} // namespace hetsim::fuzz
