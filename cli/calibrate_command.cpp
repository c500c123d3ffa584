#include "cli/command.hpp"
namespace hetsim::cli {
CommandRunner add_calibrate_command(CLI::App& app)
{
  app.add_subcommand("calibrate", "todo");
  return [] { return 0; };
}
} // namespace hetsim::cli
