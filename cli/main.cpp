/// `hetsim`: plan, simulate and (later) run distributed training on heterogeneous clusters.
/// Every HetSim error becomes one line on stderr and exit code 2; only this file calls exit paths.

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"

#include <iostream>

int main(int argc, char** argv)
{
  CLI::App app{"HetSim: plan, simulate and run distributed training on heterogeneous GPU clusters.\n"
               "Run `hetsim simulate` with no options for the built-in default scenario."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hetsim 0.1");

  auto simulate  = hetsim::cli::add_simulate_command(app);
  auto inspect   = hetsim::cli::add_inspect_command(app);
  auto search    = hetsim::cli::add_search_command(app);
  auto run       = hetsim::cli::add_run_command(app, argc, argv);
  auto profile   = hetsim::cli::add_profile_command(app);
  auto calibrate = hetsim::cli::add_calibrate_command(app);
  auto validate  = hetsim::cli::add_validate_command(app);
  auto sweep     = hetsim::cli::add_sweep_command(app);
  auto plot      = hetsim::cli::add_plot_command(app);
  auto generate  = hetsim::cli::add_generate_cluster_command(app);
  auto exporter  = hetsim::cli::add_export_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version print and exit 0; a usage mistake is one line and exit 2 like every other input error.
    if (e.get_exit_code() == 0)
      return app.exit(e);
    std::cerr << "hetsim: " << hetsim::single_line(e.what())
              << " (`hetsim --help`, or a command's --help, lists the options)\n";
    return 2;
  }

  try {
    hetsim::cli::check_option_values(app);
    if (app.got_subcommand("simulate"))
      return simulate();
    if (app.got_subcommand("inspect"))
      return inspect();
    if (app.got_subcommand("search"))
      return search();
    if (app.got_subcommand("run"))
      return run();
    if (app.got_subcommand("profile"))
      return profile();
    if (app.got_subcommand("calibrate"))
      return calibrate();
    if (app.got_subcommand("validate"))
      return validate();
    if (app.got_subcommand("sweep"))
      return sweep();
    if (app.got_subcommand("plot"))
      return plot();
    if (app.got_subcommand("generate-cluster"))
      return generate();
    if (app.got_subcommand("export"))
      return exporter();
  } catch (const hetsim::Error& e) {
    std::cerr << "hetsim: " << hetsim::single_line(e.what()) << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "hetsim: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "hetsim: internal error: " << hetsim::single_line(e.what()) << '\n';
    return 3;
  }
  return 0;
}
