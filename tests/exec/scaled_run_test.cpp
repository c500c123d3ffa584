/// `hetsim run --scale` records its scale in the trace, and `hetsim validate` simulates the scaled work.

#include "exec_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace hetsim::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> scenario(const std::string& command)
{
  return {command,
          "--cluster",
          data_file("cluster4.json"),
          "--model",
          data_file("model4.json"),
          "--plan",
          data_file("pp2dp2z3.json")};
}

} // namespace

TEST_CASE("validate: a trace of `run --scale 0.25` is compared with the simulation of the scaled schedule")
{
  ScratchDir dir("scaled");
  auto run = scenario("run");
  run.insert(run.end(), {"--trace-dir", (dir.path / "run").string(), "--scale", "0.25", "--iterations", "1"});
  REQUIRE_MESSAGE(Child(run, dir.path / "run.log").wait(120) == 0, read_text(dir.path / "run.log"));
  const fs::path trace = dir.path / "run" / "trace.json";
  auto doc             = nlohmann::json::parse(read_text(trace));
  CHECK(doc["otherData"]["scale"] == 0.25);

  auto validate = scenario("validate");
  validate.insert(validate.end(), {"--trace", trace.string(), "--report", (dir.path / "validate.json").string()});
  REQUIRE_MESSAGE(Child(validate, dir.path / "validate.log").wait(60) == 0, read_text(dir.path / "validate.log"));
  const auto report = nlohmann::json::parse(read_text(dir.path / "validate.json"));
  CHECK(report["plans"][0]["scale"] == 0.25);

  auto simulate = scenario("simulate");
  simulate.insert(simulate.end(), {"--report", (dir.path / "full.json").string()});
  REQUIRE(Child(simulate, dir.path / "simulate.log").wait(60) == 0);
  const double full_s = nlohmann::json::parse(read_text(dir.path / "full.json"))["iteration_time_s"];
  CHECK(report["plans"][0]["predicted_iteration_s"].get<double>() < full_s / 2);

  // Without its scale the trace's bytes are not the plan's: one clear error.
  doc["otherData"].erase("scale");
  std::ofstream(dir.path / "unscaled.json") << doc.dump();
  validate = scenario("validate");
  validate.insert(validate.end(), {"--trace", (dir.path / "unscaled.json").string()});
  CHECK(Child(validate, dir.path / "unscaled.log").wait(60) == 2);
  CHECK(read_text(dir.path / "unscaled.log").find("bytes in the measured trace but") != std::string::npos);
}
