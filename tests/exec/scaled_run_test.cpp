/// `hetsim run --scale` records its scale in the trace, and `hetsim validate` and `hetsim calibrate --plan`
/// simulate the scaled work.

#include "exec_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>

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

/// β of each link class in a calibration file.
std::map<std::string, double> betas(const fs::path& calibration)
{
  const auto doc = nlohmann::json::parse(read_text(calibration));
  std::map<std::string, double> out;
  for (const auto& [link, fit] : doc["links"].items())
    out[link] = fit["beta_seconds_per_byte"].get<double>();
  return out;
}

} // namespace

TEST_CASE("validate and calibrate --plan: a trace of `run --scale 0.25` is replayed as the scaled schedule")
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

  // The same trace without its scale: its bytes are not the plan's.
  doc["otherData"].erase("scale");
  const fs::path unscaled = dir.path / "unscaled.json";
  std::ofstream(unscaled) << doc.dump();
  validate = scenario("validate");
  validate.insert(validate.end(), {"--trace", unscaled.string()});
  CHECK(Child(validate, dir.path / "unscaled.log").wait(60) == 2);
  CHECK(read_text(dir.path / "unscaled.log").find("bytes in the measured trace but") != std::string::npos);

  // calibrate --plan replays the scaled schedule too. Replayed unscaled, the same measurements cover 4-16x
  // the bytes, so every link comes out several times faster; ignoring the scale, both fits would be the same.
  std::map<std::string, double> beta;
  for (const fs::path& measured : {trace, unscaled}) {
    auto calibrate = scenario("calibrate");
    calibrate.insert(calibrate.end(), {"--trace", measured.string(), "--out", (dir.path / "cal.json").string()});
    REQUIRE_MESSAGE(Child(calibrate, dir.path / "cal.log").wait(120) == 0, read_text(dir.path / "cal.log"));
    const std::string suffix = measured == trace ? "" : " unscaled";
    for (const auto& [link, b] : betas(dir.path / "cal.json"))
      beta[link + suffix] = b;
  }
  for (const char* link : {"inter_node", "inter_region"}) {
    INFO(link);
    CHECK(beta.at(link) > 2 * beta.at(std::string(link) + " unscaled"));
  }
}
