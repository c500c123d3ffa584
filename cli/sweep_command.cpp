/// `hetsim sweep`: every cell of a spec planned and simulated, one CSV (resumable) and one JSON; under
/// `mpirun -np N` the cells are shared between the ranks and the output is the same as with one process.

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "jobs/jobs_file.hpp"
#include "sweep/run_sweep.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

namespace hetsim::cli {
namespace {

struct SweepOptions {
  std::string spec_file;
  std::string out_file;
  std::string json_file;
  bool no_json = false;
};

int run_sweep_command(const SweepOptions& options)
{
  if (options.spec_file.empty() || options.out_file.empty())
    throw InputError("sweep: give --spec (the sweep JSON) and --out (the results CSV)");
  const sweep::SweepSpec spec = sweep::load_sweep_spec(options.spec_file);
  // Every file the sweep reads: the spec and each cell's cluster and model.
  std::vector<std::string> inputs = {options.spec_file};
  const auto add_input = [&](const std::string& file) {
    if (!file.empty() && std::find(inputs.begin(), inputs.end(), file) == inputs.end())
      inputs.push_back(file);
  };
  std::set<std::string> besides; // jobs files beside the cells: they and the files they name are read too
  for (const sweep::Cell& cell : sweep::sweep_cells(spec)) {
    for (const std::string* file : {&cell.cluster_path, &cell.model_path})
      add_input(*file);
    if (!cell.beside_path.empty())
      besides.insert(cell.beside_path);
  }
  for (const std::string& beside : besides) {
    add_input(beside);
    for (const std::string& named : jobs::files_named(beside))
      add_input(named);
  }
  check_output(options.out_file, inputs, "--out");
  sweep::SweepOutput output;
  output.csv_file = options.out_file;
  if (!options.no_json)
    output.json_file = options.json_file.empty()
                           ? std::filesystem::path(options.out_file).replace_extension(".json").string()
                           : options.json_file;
  inputs.push_back(options.out_file);
  if (!output.json_file.empty() && options.json_file.empty()) {
    // The JSON beside the CSV is named after it: say how to name it otherwise when that name is taken.
    try {
      check_output(output.json_file, inputs, "--out");
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) + " (the results' JSON beside " + options.out_file + " would be " +
                       output.json_file + "; give --json FILE to name it, or --no-json)");
    }
  } else if (!output.json_file.empty()) {
    check_output(output.json_file, inputs, "--json");
  }
  check_distinct_outputs({{"--out", output.csv_file}, {options.json_file.empty() ? "--out (its .json)" : "--json",
                                                       output.json_file}});

  auto communicator           = sweep::make_communicator();
  const auto summary = sweep::run_sweep(spec, output, *communicator, stderr_progress());
  if (communicator->rank() == 0) {
    std::cout << "sweep: " << summary.cells << " cells, " << summary.resumed << " already in " << output.csv_file
              << ", " << summary.run << " run on " << communicator->size() << " process"
              << (communicator->size() > 1 ? "es" : "") << "; results in " << output.csv_file;
    if (!output.json_file.empty())
      std::cout << " and " << output.json_file;
    std::cout << '\n';
  }
  return 0;
}

} // namespace

CommandRunner add_sweep_command(CLI::App& app)
{
  auto options      = std::make_shared<SweepOptions>();
  CLI::App* command = app.add_subcommand(
      "sweep", "Plan and simulate every cell of a sweep spec (clusters x models x planners x parameters) into one "
               "CSV and JSON; cells already in the CSV are skipped. Run under mpirun -np N to share the cells.");
  command->add_option("--spec", options->spec_file, "sweep spec JSON (see docs/sweeps.md)");
  command->add_option("--out", options->out_file, "results CSV; an existing one is resumed");
  command->add_option("--json", options->json_file, "results JSON (default: --out with a .json extension)");
  command->add_flag("--no-json", options->no_json, "write no JSON");
  return [options] { return run_sweep_command(*options); };
}

} // namespace hetsim::cli
