#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

TEST_CASE("default efficiency grows with the batch and saturates")
{
  const GpuSpec& v100 = *find_catalog_gpu("V100");
  ComputeModel model;
  CHECK(model.efficiency(v100, 512) == doctest::Approx(0.3));
  CHECK(model.efficiency(v100, 8192) > model.efficiency(v100, 2048));
  CHECK(model.efficiency(v100, 1e9) < ComputeModel::kMaxEfficiency);
  const double flops = 1e12;
  CHECK(model.compute_seconds(v100, flops, Dtype::fp16, 512) == doctest::Approx(flops / (125e12 * 0.3)));
  CHECK(model.compute_seconds(v100, flops, Dtype::fp32, 512) == doctest::Approx(flops / (15.7e12 * 0.3)));
  CHECK(model.optimizer_seconds(v100, 1e9) == doctest::Approx(36e9 / 900e9));
}

TEST_CASE("calibration replaces the default curve and interpolates monotonically")
{
  const auto json = nlohmann::json::parse(R"({"efficiency": {"T4": [[1024, 0.2], [2048, 0.3], [4096, 0.35], [8192, 0.4]]},
                                            "links": {"inter_node": {"alpha_s": 1e-5, "beta_seconds_per_byte": 1e-9}}})");
  const Calibration cal = calibration_from_json(json, "cal.json");
  ComputeModel model(&cal);
  const GpuSpec& t4 = *find_catalog_gpu("T4");
  CHECK(model.efficiency(t4, 2048) == doctest::Approx(0.3));
  CHECK(model.efficiency(t4, 100) == doctest::Approx(0.2));
  CHECK(model.efficiency(t4, 1e6) == doctest::Approx(0.4));
  const double mid = model.efficiency(t4, 3000);
  CHECK(mid > 0.3);
  CHECK(mid < 0.35);
  // Uncalibrated GPUs keep the default curve.
  CHECK(model.efficiency(*find_catalog_gpu("V100"), 512) == doctest::Approx(0.3));
  // Round trip.
  CHECK(calibration_to_json(calibration_from_json(calibration_to_json(cal), "x")) == calibration_to_json(cal));
}

TEST_CASE("bad calibration input")
{
  auto parse = [](const char* text) { return calibration_from_json(nlohmann::json::parse(text), "cal.json"); };
  CHECK_THROWS_WITH_AS(parse(R"({"efficiency": {"T4": [[1024, 1.5]]}})"),
                       "cal.json: efficiency.T4[0][1]: expected an efficiency in (0, 1], got number 1.5", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"efficiency": {"T4": [[1024]]}})"),
                       "cal.json: efficiency.T4[0]: expected a [tokens, efficiency] pair, got array", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"links": {"x": {"alpha_s": 1}}})"),
                       "cal.json: links.x: missing required field 'beta_seconds_per_byte'", InputError);
}
