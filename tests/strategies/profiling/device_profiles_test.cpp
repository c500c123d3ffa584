/// Device profile files (`hetsim profile` writes them, `hetsim search --device-profile` reads them) and the
/// profiler that answers from them.

#include "strategies/profiling/device_profiles.hpp"
#include "tests/temp_folder.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "strategies/planners/poplar/poplar.hpp"
#include "strategies/planners/registry.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Two A100s (80 GB) and two V100s (16 GB) in one node.
Cluster mixed_cluster()
{
  Cluster cluster("mixed");
  const int big    = cluster.add_gpu(a100());
  const int small  = cluster.add_gpu(v100());
  const int region = cluster.add_region("dc", 5e-6);
  const int node   = cluster.add_node(region, "node", Link{300 * units::kGBps, 2e-6}, Link{100 * units::kGbps, 5e-6});
  for (int gpu : {big, big, small, small})
    cluster.add_device(node, gpu);
  return cluster;
}

DeviceProfileEntry entry(const std::string& gpu, int stage, int max_batch, std::vector<ProfilePoint> points)
{
  DeviceProfileEntry e;
  e.gpu               = gpu;
  e.setting           = stage;
  e.memory_cap_bytes  = 16 * units::kGiB;
  e.profile.max_batch = max_batch;
  e.profile.steps     = static_cast<int>(points.size()) + 1;
  e.profile.points    = std::move(points);
  return e;
}

DeviceProfiles sample_profiles()
{
  DeviceProfiles profiles;
  profiles.model       = "toy";
  profiles.executor    = "cpu";
  profiles.scale       = 0.5;
  profiles.batch_limit = 256;
  profiles.entries     = {entry("A100-SXM4-80GB", 0, 40,
                                {{1, 0.01}, {2, 0.015}, {4, 0.025}, {8, 0.045}, {16, 0.085}, {32, 0.165}, {40, 0.205}}),
                          entry("V100-SXM2-16GB", 0, 6, {{1, 0.03}, {2, 0.05}, {4, 0.09}, {6, 0.13}}),
                          entry("V100-SXM2-16GB", 1, 9, {{1, 0.03}, {2, 0.05}, {4, 0.09}, {8, 0.17}, {9, 0.19}})};
  return profiles;
}

/// A file in a fresh directory, removed at the end of the test.
struct TempFile {
  hetsim::test::TempFolder dir{"device_profiles"};
  std::string path;
  explicit TempFile(const std::string& content) : path(dir.write("profile.json", content)) {}
};

/// The message of the InputError that loading `json` throws.
std::string load_error(const nlohmann::json& json, const models::Workload& workload, const Cluster& cluster,
                       std::string& file)
{
  TempFile temp(json.dump());
  file = temp.path;
  try {
    (void)load_device_profiles(temp.path, workload, cluster);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

} // namespace

TEST_CASE("device profiles survive a round trip through their file")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(4);
  DeviceProfiles written          = sample_profiles();
  // The same GPU and stage with recompute is an entry of its own.
  written.entries.push_back(written.entries[1]);
  written.entries.back().setting = ProfileSetting(0, Recompute::full);
  written.entries.push_back(written.entries[1]);
  written.entries.back().setting = ProfileSetting(0, Recompute::selective);
  TempFile file(device_profiles_to_json(written).dump(1));
  const DeviceProfiles read = load_device_profiles(file.path, workload, cluster);
  CHECK(read.find("V100-SXM2-16GB", ProfileSetting(0, Recompute::full)) == 3);
  CHECK(read.find("V100-SXM2-16GB", ProfileSetting(0, Recompute::selective)) == 4);
  CHECK(read.find("V100-SXM2-16GB", 0) == 1);
  CHECK(read.find("A100-SXM4-80GB", ProfileSetting(0, Recompute::full)) == -1);
  CHECK(read.origin == file.path);
  CHECK(read.model == written.model);
  CHECK(read.executor == written.executor);
  CHECK(read.scale == written.scale);
  CHECK(read.dtype == written.dtype);
  CHECK(read.batch_limit == written.batch_limit);
  REQUIRE(read.entries.size() == written.entries.size());
  for (std::size_t i = 0; i < read.entries.size(); ++i) {
    CAPTURE(i);
    const auto& a = read.entries[i];
    const auto& b = written.entries[i];
    CHECK(a.gpu == b.gpu);
    CHECK(a.setting == b.setting);
    CHECK(a.memory_cap_bytes == b.memory_cap_bytes);
    CHECK(a.profile.max_batch == b.profile.max_batch);
    CHECK(a.profile.steps == b.profile.steps);
    REQUIRE(a.profile.points.size() == b.profile.points.size());
    for (std::size_t j = 0; j < a.profile.points.size(); ++j) {
      CHECK(a.profile.points[j].batch == b.profile.points[j].batch);
      CHECK(a.profile.points[j].step_seconds == b.profile.points[j].step_seconds);
    }
  }
}

TEST_CASE("the recorded profiler gives back the profiled limit and step times, and the curve between them")
{
  const Cluster cluster         = mixed_cluster();
  const DeviceProfiles profiles = sample_profiles();
  RecordedProfiler profiler(cluster, profiles);
  const DeviceProfile v100_profile = profile_device(profiler, 2, 0, 1000);
  CHECK(v100_profile.max_batch == 6);
  CHECK(v100_profile.steps <= 4); // 1, 2, 4, 6: the estimate is the limit, no binary search
  CHECK(profile_device(profiler, 0, 0, 1000).max_batch == 40);
  CHECK(profile_device(profiler, 0, 0, 20).max_batch == 20); // the global batch caps it as before
  CHECK(profiler.run_step(2, 7, 0).out_of_memory);
  CHECK(profiler.run_step(2, 9, 1).step_seconds == doctest::Approx(0.19));
  // Between measured batches, the speed curve's interpolation.
  const SpeedCurve curve(profiles.entries[0].profile);
  CHECK(profiler.run_step(0, 24, 0).step_seconds == doctest::Approx(curve.step_seconds(24)));
  CHECK(profiler.run_step(0, 24, 0).step_seconds > 0.085);
  CHECK(profiler.run_step(0, 24, 0).step_seconds < 0.165);
}

TEST_CASE("poplar planned from a device profile keeps every device within its profiled batch")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(4);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 64;
  const DeviceProfiles profiles   = sample_profiles();
  PlannerContext context;
  context.device_profiles   = &profiles;
  context.flags             = {"zero=0"};
  const auto profiler       = context.make_profiler(problem);
  const PoplarResult result = plan_poplar(problem, *profiler, 0);
  CHECK(result.plan.global_batch() == 64);
  for (int d = 0; d < 4; ++d) {
    CAPTURE(d);
    CHECK(result.plan.micro_batch[d] <= (d < 2 ? 40 : 6));
  }
  CHECK(result.plan.micro_batch[0] > result.plan.micro_batch[2]);
  for (const Candidate& c : make_poplar_planner()->propose(problem, context))
    for (int d = 0; d < 4; ++d)
      CHECK(c.plan.micro_batch[d] <= (d < 2 ? 40 : 6));

  // Profiles measured in another dtype do not apply: step times and memory differ.
  DeviceProfiles fp32_profiles = profiles;
  fp32_profiles.origin         = "p.json";
  fp32_profiles.dtype          = Dtype::fp32;
  context.device_profiles      = &fp32_profiles;
  CHECK_THROWS_WITH_AS(context.make_profiler(problem),
                       "p.json: dtype: expected fp16, the dtype being planned (profile again with --dtype fp16), got "
                       "fp32",
                       InputError);
}

TEST_CASE("a stage the file lacks is one error naming the file, the GPU and the stage")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(4);
  DeviceProfiles profiles         = sample_profiles();
  profiles.origin                 = "p.json";
  profiles.entries[1].profile     = DeviceProfile{}; // the V100 holds no sequence at ZeRO-0: poplar raises the stage
  profiles.entries.pop_back();                       // ...to 1, which was profiled for neither type
  RecordedProfiler profiler(cluster, profiles);
  Problem problem      = make_problem(cluster, workload);
  problem.global_batch = 64;
  try {
    (void)plan_poplar(problem, profiler, 0);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("p.json: profiles: expected an entry for A100-SXM4-80GB at ZeRO-1, got ZeRO-0 only") == 0);
  }
}

TEST_CASE("a bad device profile file is one line naming the file, the field and what was expected")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(4);
  const nlohmann::json good       = device_profiles_to_json(sample_profiles());
  struct Case {
    const char* what;
    nlohmann::json json;
    std::string expected; ///< after "<file>: "
  };
  std::vector<Case> cases;
  auto with = [&](const char* what, auto edit, std::string expected) {
    nlohmann::json json = good;
    edit(json);
    cases.push_back({what, json, std::move(expected)});
  };
  with(
      "another model", [](auto& j) { j["model"] = "gpt2"; },
      "model: expected \"toy\", the model being planned (profiles of another model do not apply), got string "
      "\"gpt2\"");
  with(
      "no batch limit", [](auto& j) { j.erase("batch_limit"); }, "(top level): missing required field 'batch_limit'");
  with(
      "a typo", [](auto& j) { j["profiles"][0]["max_bacth"] = 3; }, "profiles[0]: unknown field 'max_bacth'");
  with(
      "a GPU not in the cluster", [](auto& j) { j["profiles"][1]["gpu"] = "T4"; },
      "profiles[1].gpu: expected a GPU of cluster 'mixed'");
  with(
      "ZeRO-4", [](auto& j) { j["profiles"][0]["zero_stage"] = 4; },
      "profiles[0].zero_stage: expected a ZeRO stage from 0 to 3, got number 4");
  with(
      "a max batch above the limit", [](auto& j) { j["profiles"][0]["max_batch"] = 300; },
      "profiles[0].max_batch: expected at most the batch_limit 256, got number 300");
  with(
      "a point above the max batch", [](auto& j) { j["profiles"][1]["points"][3]["batch"] = 7; },
      "profiles[1].points[3].batch: expected a batch of at most the entry's max_batch 6, got number 7");
  with(
      "points out of order", [](auto& j) { j["profiles"][1]["points"][2]["batch"] = 2; },
      "profiles[1].points[2].batch: expected a batch above the previous point's 2");
  with(
      "a negative time", [](auto& j) { j["profiles"][1]["points"][0]["step_s"] = -1; },
      "profiles[1].points[0].step_s: expected a positive number");
  with(
      "no points though a batch fits", [](auto& j) { j["profiles"][1]["points"] = nlohmann::json::array(); },
      "profiles[1].points: expected at least one point (max_batch is 6)");
  with(
      "the same GPU and stage twice", [](auto& j) { j["profiles"][2]["zero_stage"] = 0; },
      "profiles[2].zero_stage: expected one entry per GPU and setting, not a second one for V100-SXM2-16GB at "
      "ZeRO-0");
  with(
      "a GPU type without an entry", [](auto& j) { j["profiles"].erase(0); },
      "profiles: expected an entry for every GPU type of cluster 'mixed', got none for A100-SXM4-80GB");
  with(
      "not a profile at all", [](auto& j) { j = nlohmann::json::array(); },
      "(top level): expected an object as `hetsim profile` writes it");
  for (const Case& c : cases) {
    CAPTURE(c.what);
    std::string file;
    const std::string message = load_error(c.json, workload, cluster, file);
    CHECK(message.find(file + ": " + c.expected) == 0);
    CHECK(message.find('\n') == std::string::npos);
  }
}
