/// `hetsim export`: a plan as the files Megatron-LM, DeepSpeed, torchrun or Slurm launch it with.

#include "cli/command.hpp"
#include "cli/scenario.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "launch/plan_export.hpp"
#include "strategies/lowering/memory.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace hetsim::cli {
namespace {

namespace fs = std::filesystem;

struct ExportOptions {
  ScenarioOptions scenario;
  std::string format;
  std::string out_dir;
};

int run_export(ExportOptions& options)
{
  launch::ExportFormat format{};
  if (!launch::parse_export_format(options.format, format))
    throw InputError("--format: expected megatron, deepspeed, megatron-deepspeed, torchrun or slurm, got " + quote(options.format));
  if (options.scenario.plan.empty())
    throw InputError("--plan: expected the plan to export (hetsim search --best FILE writes one)");
  resolve_defaults(options.scenario);
  auto scenario = std::make_unique<Scenario>();
  load_scenario(options.scenario, *scenario);
  // A plan that does not fit would fail on the cluster as it fails here.
  strategies::check_memory(strategies::plan_memory(scenario->plan, scenario->problem));

  launch::ExportInputs inputs{&scenario->cluster, &scenario->workload, &scenario->plan, options.scenario.plan,
                              options.scenario.model, options.scenario.cluster};
  const std::vector<launch::ExportFile> files = launch::export_plan(inputs, format);

  if (options.out_dir.empty()) {
    for (const launch::ExportFile& file : files)
      std::cout << (files.size() > 1 ? "==> " + file.name + " <==\n" : "") << file.content;
    return 0;
  }
  // The folder is the output: made when missing, in a directory that must exist, as every output's must.
  std::error_code error;
  fs::path folder = fs::path(options.out_dir).lexically_normal();
  if (!folder.has_filename()) // "out/"
    folder = folder.parent_path();
  const fs::path parent = folder.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, error))
    throw InputError("--out " + quote(options.out_dir, 300) + ": its directory " + quote(parent.string(), 300) +
                     " does not exist");
  fs::create_directory(options.out_dir, error);
  if (error || !fs::is_directory(options.out_dir))
    throw InputError("--out: cannot create the directory " + quote(options.out_dir) +
                     (error ? ": " + error.message() : ": a file of that name exists"));
  for (const launch::ExportFile& file : files) { // all checked before any is written
    const std::string path = (fs::path(options.out_dir) / file.name).string();
    // HetSim names these files itself: a link in their place was put there by someone else.
    if (fs::is_symlink(fs::symlink_status(path, error)))
      throw InputError("--out: " + quote(path) + " is a link; export writes its own files and never through a "
                       "link (remove it, or choose another folder)");
    check_output(path, options.scenario.inputs(), "--out");
  }
  for (const launch::ExportFile& file : files) {
    const std::string path = (fs::path(options.out_dir) / file.name).string();
    write_file_atomically(path, file.content);
    if (file.executable) {
      fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, error);
      if (error)
        throw InputError("--out: cannot make " + quote(path) + " executable: " + error.message());
    }
    std::cout << "wrote " << path << "\n";
  }
  return 0;
}

} // namespace

CommandRunner add_export_command(CLI::App& app)
{
  auto options      = std::make_shared<ExportOptions>();
  CLI::App* command = app.add_subcommand(
      "export", "Write what a framework launches a plan with: Megatron-LM arguments (megatron), a DeepSpeed "
                "configuration (deepspeed), or per-node torchrun / a Slurm job (torchrun, slurm) whose rank map "
                "runs every rank on the GPU the plan places it on. A plan the framework cannot run is refused, "
                "naming the field.");
  options->scenario.add_to(*command);
  command->add_option("--format", options->format, "megatron, deepspeed, megatron-deepspeed, torchrun or slurm")->required();
  command->add_option("--out", options->out_dir, "write the files into this directory (default: print them)");
  return [options] { return run_export(*options); };
}

} // namespace hetsim::cli
