/// The mutation harness itself: mutations are deterministic and change the text, and the contract check tells a
/// refusal naming the file from one that does not and from an error that is not the input's.

#include "fuzz/command_line.hpp"
#include "fuzz/mutate.hpp"
#include "fuzz/mutation_run.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

using namespace hetsim::fuzz;
namespace fs = std::filesystem;

TEST_CASE("mutations: same text and seed give the same inputs, and they differ from the seed and each other")
{
  const std::string seed = R"({"tp": 1, "pp": 2, "stage_starts": [0, 2], "dtype": "fp16", "nested": {"a": [1, 2]}})";
  std::mt19937_64 a(7), b(7);
  std::set<std::string> distinct;
  for (int i = 0; i < 200; ++i) {
    const std::string x = mutate(seed, a);
    CHECK(x == mutate(seed, b));
    distinct.insert(x);
  }
  CHECK(distinct.count(seed) == 0);
  CHECK(distinct.size() > 150);
}

TEST_CASE("contract: accepted, refused in one line naming the file, or a violation")
{
  const InputContext context{HETSIM_SOURCE_DIR, HETSIM_CLI_PATH, fs::temp_directory_path()};
  const fs::path file = fs::temp_directory_path() / "hetsim_contract_plan.json";
  auto check = [&](const std::string& text, bool& refused) {
    std::ofstream(file) << text;
    return contract_violation(context, InputKind::plan, file.string(), refused);
  };
  bool refused = true;
  CHECK(!check(R"({"tp": 1, "pp": 1, "dp": 4, "stage_starts": [0], "micro_batch": 2, "grad_accum": 1})", refused));
  CHECK(!refused);
  CHECK(!check(R"({"tp": 1, "pp": 1, "dp": 4, "stage_starts": [0], "micro_batch": 1e309})", refused));
  CHECK(refused);
  CHECK(!check(R"({"tp": "two"})", refused));
  CHECK(refused);
  // A file that names no input kind's file: the trace reader refuses it naming the file, never crashing.
  fs::remove(file);
  CHECK(!check("", refused));
  CHECK(refused);
}

TEST_CASE("command lines: mutations are deterministic, and the contract tells a refusal from a violation")
{
  const std::string seed = R"(["simulate", "--cluster", "@cluster4.json", "--report", "@out/a.json", "--trace", "@out/b.json"])";
  std::mt19937_64 a(3), b(3);
  for (int i = 0; i < 50; ++i)
    CHECK(mutate_command_line(seed, a) == mutate_command_line(seed, b));

  std::string work = (fs::temp_directory_path() / "hetsim_fuzz_command_XXXXXX").string();
  REQUIRE(::mkdtemp(work.data()) != nullptr);
  const CommandContext context{HETSIM_CLI_PATH, HETSIM_SOURCE_DIR, work, 120};
  bool refused = false;
  CHECK(!command_line_violation(context, R"(["inspect cluster", "@cluster4.json"])", refused));
  CHECK(!refused);
  // An input named as the output, nan for a number, a pipe no one writes to: each refused in one line.
  for (const char* argv : {R"(["simulate", "--cluster", "@cluster4.json", "--model", "@model4.json", "--plan",
                              "@dp4.json", "--report", "@model4.json"])",
                           R"(["search", "--cluster", "@cluster4.json", "--model", "@model4.json",
                              "--global-batch", "8", "--memory-limit", "nan"])",
                           R"(["inspect cluster", "@fifo"])"}) {
    CHECK_MESSAGE(!command_line_violation(context, argv, refused), argv);
    CHECK(refused);
  }
  fs::remove_all(work);
}
