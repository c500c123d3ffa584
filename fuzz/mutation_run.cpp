#include "fuzz/mutation_run.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "fuzz/command_line.hpp"
#include "fuzz/mutate.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <new>
#include <ostream>
#include <random>
#include <typeinfo>

namespace hetsim::fuzz {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& file, const std::string& text)
{
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

/// Files no loader may hang, crash or fill memory on: a device that never ends, one that is empty, a directory,
/// a pipe no process writes to (waited on for HETSIM_SILENT_PIPE_S), a sparse file of 3 GB.
std::vector<std::string> special_files(const fs::path& scratch)
{
  const fs::path fifo = scratch / "special_fifo", sparse = scratch / "special_sparse.json";
  if (!fs::is_fifo(fifo))
    ::mkfifo(fifo.c_str(), 0600);
  if (!fs::exists(sparse)) {
    std::ofstream(sparse).close();
    fs::resize_file(sparse, std::uintmax_t{3} << 30);
  }
  return {"/dev/zero", "/dev/null", scratch.string(), fifo.string(), sparse.string()};
}

} // namespace

std::optional<std::string> contract_violation(const InputContext& context, InputKind kind, const std::string& file,
                                              bool& refused)
{
  refused = false;
  if (kind == InputKind::command_line)
    return command_line_violation({context.cli, context.root, context.work}, read_input_file(file), refused);
  auto one_line = [&](const std::string& what, bool must_name_file) {
    refused = true;
    return message_violation(what, file, must_name_file);
  };
  try {
    use_input(context, kind, file);
    return std::nullopt;
  } catch (const InputError& e) {
    return one_line(e.what(), true);
  } catch (const InfeasiblePlan& e) {
    return one_line(e.what(), false);
  } catch (const Error& e) {
    return "not an input error (" + std::string(typeid(e).name()) + "): " + quote(e.what(), 300);
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::exception& e) {
    return "an internal error: " + quote(e.what(), 300);
  }
}

FuzzReport run_mutations(const FuzzOptions& options)
{
  FuzzReport report;
  fs::create_directories(options.scratch);
  for (InputKind kind : options.kinds) {
    KindCounts& counts = report.counts[kind];
    const fs::path file = options.scratch / (std::string(input_kind_name(kind)) + ".json");
    auto check_file = [&](const std::string& path, const std::string& text) {
      ++counts.inputs;
      bool refused = false;
      if (auto why = contract_violation(options.context, kind, path, refused)) {
        ++counts.failures;
        report.failures.push_back({kind, text, *why});
        if (options.log)
          *options.log << input_kind_name(kind) << ": " << *why << '\n';
        if (!options.failures_dir.empty()) {
          const fs::path dir = options.failures_dir / input_kind_name(kind);
          fs::create_directories(dir);
          write_text(dir / (std::to_string(counts.inputs) + ".json"), text);
        }
      } else {
        ++(refused ? counts.refused : counts.accepted);
      }
    };
    auto check = [&](const std::string& text) {
      write_text(file, text);
      check_file(file.string(), text);
    };
    const bool command_line = kind == InputKind::command_line;
    if (!command_line)
      for (const std::string& special : special_files(options.scratch))
        check_file(special, "(the special file " + special + ")");
    for (const fs::path& regression : regression_files(options.context, kind))
      check(read_input_file(regression.string()));
    std::vector<std::string> seeds;
    for (const fs::path& seed : seed_files(options.context, kind))
      seeds.push_back(read_input_file(seed.string()));
    // One stream per kind: a kind's inputs do not depend on which other kinds ran.
    std::mt19937_64 random(options.seed * 1000003 + static_cast<std::uint64_t>(kind));
    const std::size_t inputs = command_line ? options.command_lines : options.inputs_per_kind;
    for (std::size_t i = 0; i < inputs; ++i) {
      const std::string& seed = seeds[i % seeds.size()];
      check(command_line ? mutate_command_line(seed, random) : mutate(seed, random));
    }
    if (options.log)
      *options.log << input_kind_name(kind) << ": " << counts.inputs << " inputs, " << counts.accepted
                   << " accepted, " << counts.refused << " refused, " << counts.failures << " failures\n";
    fs::remove(file);
  }
  return report;
}

} // namespace hetsim::fuzz
