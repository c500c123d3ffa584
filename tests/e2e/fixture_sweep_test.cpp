/// End-to-end: every Hugging Face fixture under every framework, from search to export to replay. Each step
/// either succeeds or refuses in one line; every export's scripts parse (and pass shellcheck where installed)
/// and Megatron-LM, DeepSpeed and Megatron-DeepSpeed exports pass their framework's own checks (an FSDP plan
/// goes out as torchrun scripts); the best plan replays under `simulate` at the time the search gave it.

#include "cli_runner.hpp"
#include "export_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace hetsim::e2e;

namespace {

const std::string kAmpCluster = std::string(HETSIM_SOURCE_DIR) + "/experiments/amp_het_cluster/cluster.json";
const fs::path kFixtures      = fs::path(HETSIM_SOURCE_DIR) / "tests/models/data/hf";

/// One line, prefixed as every refusal is.
void check_one_line_refusal(const RunResult& r)
{
  CHECK(r.exit_code == 2);
  CHECK(last_line(r.output).rfind("hetsim: ", 0) == 0);
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
      for (const std::string& objection : export_objections(format, out, plan))
        FAIL_CHECK(objection);
      ++exported;
    }
  }
  MESSAGE(replayed << " best plans replayed, " << exported << " exported");
  // Most fixtures fit AMP's cluster under some framework, and most of those export.
  CHECK(replayed >= 30);
  CHECK(exported >= 20);
}
