/// End-to-end: every Hugging Face fixture under every framework, from search to export to replay. Each step
/// either succeeds or refuses in one line; Megatron-LM, DeepSpeed and Megatron-DeepSpeed exports pass their
/// framework's own checks, and an FSDP plan's torchrun scripts parse (and pass shellcheck where installed); the
/// best plan replays under `simulate` at the time the search gave it.

#include "cli_runner.hpp"
#include "framework_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace hetsim::e2e;

namespace {

const std::string kAmpCluster = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/cluster.json";
const fs::path kFixtures      = fs::path(HETSIM_SOURCE_DIR) / "tests/models/data/hf";

/// One line, prefixed as every refusal is.
void check_one_line_refusal(const RunResult& r)
{
  CHECK(r.exit_code == 2);
  const std::string last = r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1);
  CHECK(last.rfind("hetsim: ", 0) == 0);
}

/// What the framework's own checks at the pinned release say of the exported files; for a launcher's scripts,
/// what bash (and shellcheck, where installed) says of them.
std::vector<std::string> objections(const std::string& format, const fs::path& out, const nlohmann::json& plan)
{
  if (format == "torchrun") {
    static const bool shellcheck = run_command("command -v shellcheck > /dev/null").exit_code == 0;
    std::vector<std::string> said;
    for (const auto& file : fs::directory_iterator(out))
      if (file.path().extension() == ".sh") {
        const std::string script = file.path().string();
        if (const RunResult r = run_command("bash -n " + script); r.exit_code != 0)
          said.push_back(script + " does not parse: " + r.output);
        if (shellcheck)
          if (const RunResult r = run_command("shellcheck -s bash " + script); r.exit_code != 0)
            said.push_back(script + ": " + r.output);
      }
    return said;
  }
  namespace checks = hetsim::launch::testing;
  const int world  = static_cast<int>(plan["placement"].size());
  std::vector<std::string> said;
  if (format == "megatron")
    said = checks::megatron_objections(checks::read_megatron_args_sh(read_file(out / "megatron_args.sh"), world));
  if (format == "megatron-deepspeed")
    said = checks::megatron_deepspeed_objections(
        checks::read_megatron_args_sh(read_file(out / "megatron_deepspeed_args.sh"), world));
  if (format == "deepspeed" || format == "megatron-deepspeed") {
    const auto config = nlohmann::json::parse(read_file(out / "ds_config.json"));
    for (const std::string& objection :
         checks::deepspeed_objections(config, world, plan["pp"].get<int>(), plan["tp"].get<int>()))
      said.push_back(objection);
  }
  return said;
}

} // namespace

TEST_CASE("every Hugging Face fixture under every framework: search, export and replay agree, or refuse in one line")
{
  TempDir dir("fixture_sweep");
  int exported = 0, replayed = 0;
  for (const auto& entry : fs::directory_iterator(kFixtures)) {
    if (entry.path().extension() != ".json")
      continue; // SOURCES.md
    const std::string model = entry.path().string();
    // BERT has 512 learned positions; AMP's V100s and T4s have no bf16.
    const std::string seq_len = entry.path().stem() == "bert-base-uncased" ? "512" : "1024";
    const std::string inputs  = "--cluster " + kAmpCluster + " --model " + model;
    for (const std::string framework : {"megatron", "deepspeed", "fsdp", "megatron-deepspeed"}) {
      CAPTURE(model);
      CAPTURE(framework);
      const std::string tag        = entry.path().stem().string() + "-" + framework;
      const std::string best       = dir.file(tag + ".json");
      const std::string candidates = dir.file(tag + "-candidates.json");
      const RunResult search = run_hetsim("search " + inputs + " --dtype fp16 --seq-len " + seq_len +
                                          " --global-batch 32 --top 1 --framework " + framework + " --best " + best +
                                          " --out " + candidates);
      INFO(search.output);
      if (search.exit_code != 0) { // too large for 16 GiB GPUs, or no plan the framework launches
        check_one_line_refusal(search);
        continue;
      }
      const auto plan = nlohmann::json::parse(read_file(best));

      // The plan file carries the sequence length: the replay needs no --seq-len.
      const std::string report = dir.file(tag + "-report.json");
      const RunResult simulate = run_hetsim("simulate " + inputs + " --plan " + best + " --report " + report);
      INFO(simulate.output);
      REQUIRE(simulate.exit_code == 0);
      const nlohmann::json searched_row = nlohmann::json::parse(read_file(candidates)).at(0);
      REQUIRE_MESSAGE(!searched_row.at("simulated_s").is_null(), "the best plan was ranked by its estimate only");
      const double searched = searched_row.at("simulated_s").get<double>();
      CHECK(nlohmann::json::parse(read_file(report))["iteration_time_s"].get<double>() ==
            doctest::Approx(searched).epsilon(1e-9));
      ++replayed;

      const std::string format = framework == "fsdp" ? "torchrun" : framework;
      const fs::path out       = dir.path / (tag + "-export");
      const RunResult exported_run = run_hetsim("export " + inputs + " --plan " + best + " --format " + format +
                                                " --out " + out.string());
      INFO(exported_run.output);
      if (exported_run.exit_code != 0) { // a model its flags cannot build, named by the model file's field
        check_one_line_refusal(exported_run);
        CHECK(exported_run.output.find("hetsim: " + model + ": ") != std::string::npos);
        continue;
      }
      for (const std::string& objection : objections(format, out, plan))
        FAIL_CHECK(format << " objects: " << objection);
      ++exported;
    }
  }
  MESSAGE(replayed << " best plans replayed, " << exported << " exported");
  // Most fixtures fit AMP's cluster under some framework, and most of those export.
  CHECK(replayed >= 30);
  CHECK(exported >= 20);
}
