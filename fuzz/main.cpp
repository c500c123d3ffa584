/// `hetsim_fuzz`: a seeded mutation run over HetSim's input kinds (mutation_run.hpp), counts per kind and
/// outcome, failing inputs kept. Exit 0 when every input kept the contract, 1 otherwise, 2 for bad options.

#include "core/error.hpp"
#include "fuzz/memory_cap.hpp"
#include "fuzz/mutation_run.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv)
{
  using namespace hetsim::fuzz;
  CLI::App app("Mutates HetSim's input files and checks that each is accepted or refused in one line naming it");
  std::string root = HETSIM_SOURCE_DIR;
  std::vector<std::string> kinds;
  FuzzOptions options;
  std::string scratch = "hetsim-fuzz-scratch", keep, list_seeds;
  app.add_option("--root", root, "the repository (seeds, fixed inputs)")->capture_default_str();
  app.add_option("--kind", kinds, "input kinds (default: all)");
  app.add_option("--inputs", options.inputs_per_kind, "mutated inputs per kind")->capture_default_str();
  app.add_option("--command-lines", options.command_lines,
                 "mutated command lines of the command_line kind (each runs the hetsim binary)")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the mutations")->capture_default_str();
  app.add_option("--scratch", scratch, "directory for the input being used")->capture_default_str();
  app.add_option("--keep", keep, "copy failing inputs to DIR/<kind>/");
  app.add_option("--list-seeds", list_seeds, "print the seed and regression files of one kind and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    options.context.root = root;
    options.context.cli  = HETSIM_CLI_PATH;
    options.context.work = std::filesystem::path(scratch) / "command_line";
    // A pipe no process writes to is refused after this wait rather than 30 s: the harness reads many.
    ::setenv("HETSIM_SILENT_PIPE_S", "0.2", 1);
    if (!list_seeds.empty()) {
      const InputKind kind = parse_input_kind(list_seeds);
      for (const auto& files : {seed_files(options.context, kind), regression_files(options.context, kind)})
        for (const auto& file : files)
          std::cout << file.string() << '\n';
      return 0;
    }
    for (const std::string& kind : kinds)
      options.kinds.push_back(parse_input_kind(kind));
    if (options.kinds.empty())
      options.kinds.assign(all_input_kinds().begin(), all_input_kinds().end());
    options.scratch      = scratch;
    options.failures_dir = keep;
    options.log          = &std::cout;
    cap_memory();
    const FuzzReport report = run_mutations(options);
    KindCounts total;
    for (const auto& [kind, c] : report.counts) {
      total.inputs += c.inputs;
      total.accepted += c.accepted;
      total.refused += c.refused;
      total.failures += c.failures;
    }
    std::cout << "total: " << total.inputs << " inputs, " << total.accepted << " accepted, " << total.refused
              << " refused, " << total.failures << " failures\n";
    return report.failures.empty() ? 0 : 1;
  } catch (const hetsim::Error& e) {
    std::cerr << "hetsim_fuzz: " << e.what() << '\n';
    return 2;
  }
}
