#pragma once
/// Each `hetsim` subcommand registers itself on the CLI11 app and runs when selected.

#include <CLI/CLI.hpp>

#include <functional>

namespace hetsim::cli {

/// Adds a subcommand to `app`; the returned callback runs it (after parsing) and returns the exit code.
using CommandRunner = std::function<int()>;

CommandRunner add_simulate_command(CLI::App& app);
CommandRunner add_inspect_command(CLI::App& app);
CommandRunner add_search_command(CLI::App& app);
/// `argv` is re-run by every rank process the local launcher starts.
CommandRunner add_run_command(CLI::App& app, int argc, char** argv);
CommandRunner add_profile_command(CLI::App& app);
CommandRunner add_calibrate_command(CLI::App& app);
CommandRunner add_validate_command(CLI::App& app);
CommandRunner add_sweep_command(CLI::App& app);
CommandRunner add_plot_command(CLI::App& app);
CommandRunner add_generate_cluster_command(CLI::App& app);
CommandRunner add_export_command(CLI::App& app);

} // namespace hetsim::cli
