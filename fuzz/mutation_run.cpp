#include "fuzz/mutation_run.hpp"

#include "core/error.hpp"
#include "fuzz/mutate.hpp"

#include <algorithm>
#include <fstream>
#include <new>
#include <ostream>
#include <random>
#include <sstream>
#include <typeinfo>

namespace hetsim::fuzz {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& file)
{
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& file, const std::string& text)
{
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

} // namespace

std::optional<std::string> contract_violation(const InputContext& context, InputKind kind, const std::string& file,
                                              bool& refused)
{
  refused = false;
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
    auto check = [&](const std::string& text) {
      write_text(file, text);
      ++counts.inputs;
      bool refused = false;
      if (auto why = contract_violation(options.context, kind, file.string(), refused)) {
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
    for (const fs::path& regression : regression_files(options.context, kind))
      check(read_text(regression));
    std::vector<std::string> seeds;
    for (const fs::path& seed : seed_files(options.context, kind))
      seeds.push_back(read_text(seed));
    // One stream per kind: a kind's inputs do not depend on which other kinds ran.
    std::mt19937_64 random(options.seed * 1000003 + static_cast<std::uint64_t>(kind));
    for (std::size_t i = 0; i < options.inputs_per_kind; ++i)
      check(mutate(seeds[i % seeds.size()], random));
    if (options.log)
      *options.log << input_kind_name(kind) << ": " << counts.inputs << " inputs, " << counts.accepted
                   << " accepted, " << counts.refused << " refused, " << counts.failures << " failures\n";
    fs::remove(file);
  }
  return report;
}

} // namespace hetsim::fuzz
