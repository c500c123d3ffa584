#include "cli/command.hpp"
namespace hetsim::cli {
CommandRunner add_validate_command(CLI::App& app)
{
  app.add_subcommand("validate", "todo");
  return [] { return 0; };
}
} // namespace hetsim::cli
