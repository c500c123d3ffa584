/// End-to-end: `hetsim profile` runs Algorithm 1 through the cpu executor, `hetsim search --device-profile` plans
/// from what it measured.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

using namespace hetsim::e2e;

namespace {

// Two "GPU types" of 20 and 40 MiB (devices 0, 1 and 2, 3); a two-layer model whose activations fill them fast.
const std::string kData   = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/";
const std::string kInputs = "--cluster " + kData + "two_types.json --model " + kData + "profile_model.json";
const std::string kQuick  = " --warmup 0 --iterations 1"; // this test checks limits, not timings

/// (gpu, zero_stage) -> max_batch.
std::map<std::pair<std::string, int>, int> max_batches(const nlohmann::json& profiles)
{
  std::map<std::pair<std::string, int>, int> out;
  for (const auto& p : profiles["profiles"])
    out[{p["gpu"].get<std::string>(), p["zero_stage"].get<int>()}] = p["max_batch"].get<int>();
  return out;
}

/// A plan's per-device micro-batches (a number when every device has the same).
int micro_batch(const nlohmann::json& plan, int device)
{
  const auto& mb = plan["micro_batch"];
  return mb.is_array() ? mb[device].get<int>() : mb.get<int>();
}

} // namespace

TEST_CASE("profile, then search: poplar's per-device batches stay within what each GPU type ran")
{
  TempDir dir("profile");
  const std::string profile = dir.file("profile.json");
  const RunResult measured  = run_hetsim("profile " + kInputs + kQuick + " --out " + profile);
  INFO(measured.output);
  REQUIRE(measured.exit_code == 0);
  const auto profiles = nlohmann::json::parse(read_file(profile));
  CHECK(profiles["model"] == "tiny-profile");
  CHECK(profiles["executor"] == "cpu");
  REQUIRE(profiles["profiles"].size() == 8); // two types, four stages
  const auto limits = max_batches(profiles);
  for (int stage = 0; stage <= 3; ++stage) {
    CAPTURE(stage);
    CHECK(limits.at({"small", stage}) >= 4);
    CHECK(limits.at({"large", stage}) > 2 * limits.at({"small", stage})); // twice the room, the same states
  }
  CHECK(limits.at({"small", 1}) > limits.at({"small", 0})); // sharded optimizer states leave more room

  const std::string plans = dir.file("plans.json");
  const RunResult search  = run_hetsim("search " + kInputs +
                                       " --planner poplar --global-batch 96 --workspace 0GiB "
                                        "--top 1 --device-profile " +
                                       profile + " --out " + plans);
  INFO(search.output);
  REQUIRE(search.exit_code == 0);
  const auto candidates = nlohmann::json::parse(read_file(plans));
  REQUIRE(!candidates.empty());
  for (const auto& c : candidates) {
    const auto& plan = c["plan"];
    const int stage  = plan.value("zero_stage", 0);
    CAPTURE(c["note"].get<std::string>());
    for (int d = 0; d < 4; ++d) {
      CAPTURE(d);
      CHECK(micro_batch(plan, d) <= limits.at({d < 2 ? "small" : "large", stage}));
    }
  }
}

TEST_CASE("profile: --memory-limit lowers the limit; refusals are one line and exit 2")
{
  TempDir dir("profile_refusals");
  const std::string capped = dir.file("capped.json");
  const RunResult r =
      run_hetsim("profile " + kInputs + kQuick + " --zero-stage 0 --memory-limit 0.01GiB --out " + capped);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto limits = max_batches(nlohmann::json::parse(read_file(capped)));
  CHECK(limits.size() == 2);
  CHECK(limits.at({"small", 0}) >= 1);
  CHECK(limits.at({"small", 0}) == limits.at({"large", 0})); // one cap below both memories

  // A size without its unit could be bytes or GiB: refused, as in every command that takes --memory-limit.
  for (const std::string& command : {"profile " + kInputs + " --out " + dir.file("y.json"),
                                     "search " + kInputs + " --global-batch 8", std::string("simulate")}) {
    CAPTURE(command);
    const RunResult bare = run_hetsim(command + " --memory-limit 16");
    CHECK(bare.exit_code == 2);
    CHECK(bare.output.find("--memory-limit: expected a size with a unit") != std::string::npos);
  }

  const RunResult stage = run_hetsim("profile " + kInputs + " --zero-stage 5 --out " + dir.file("x.json"));
  CHECK(stage.exit_code == 2);
  CHECK(stage.output.find("--zero-stage: expected 0, 1, 2, 3 or all, got '5'") != std::string::npos);

  const RunResult clobber = run_hetsim("profile " + kInputs + " --out " + kData + "profile_model.json");
  CHECK(clobber.exit_code == 2);
  CHECK(clobber.output.find("refusing to overwrite an input file") != std::string::npos);

  // A profile of another model does not apply.
  const RunResult other = run_hetsim("search --cluster " + kData + "two_types.json --model " + kData +
                                     "model4.json --planner poplar --global-batch 8 --device-profile " + capped);
  CHECK(other.exit_code == 2);
  CHECK(other.output.find(capped + ": model: expected \"tiny4\"") != std::string::npos);
  CHECK(std::count(other.output.begin(), other.output.end(), '\n') == 1);
}
