#include "costmodel/compute.hpp"
#include "costmodel/layer_profile.hpp"
#include "tests/temp_folder.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

models::Workload three_layers()
{
  models::Workload workload;
  workload.name    = "three";
  workload.seq_len = 1024;
  for (int l = 0; l < 3; ++l) {
    models::Layer layer;
    layer.name                      = "l" + std::to_string(l);
    layer.forward_flops_per_sample  = 1e12;
    layer.backward_flops_per_sample = 2e12;
    workload.layers.push_back(layer);
  }
  return workload;
}

Cluster v100_and_t4()
{
  Cluster cluster("two");
  const int v100   = cluster.add_gpu(*find_catalog_gpu("V100"));
  const int t4     = cluster.add_gpu(*find_catalog_gpu("T4"));
  const int region = cluster.add_region("r", 0);
  const int node   = cluster.add_node(region, "n", {100e9, 1e-6}, {10e9, 1e-6});
  cluster.add_device(node, v100);
  cluster.add_device(node, t4);
  return cluster;
}

} // namespace

TEST_CASE("layer profile: linear between two or three measured micro-batches, along the curve outside")
{
  // With a curve proportional to the batch, outside the measurements is proportional to the nearest one.
  const LayerProfile::BatchCurve proportional = [](double batch) { return batch; };
  LayerProfile profile;
  profile.add({"V100-SXM2-16GB", 1, 2, {0.2, 0.4, 0.6}, {}});
  profile.add({"V100-SXM2-16GB", 1, 4, {0.3, 0.6, 0.9}, {0.5, 1.0, 1.5}});
  CHECK(profile.covers("V100-SXM2-16GB", 1));
  CHECK_FALSE(profile.covers("V100-SXM2-16GB", 2));
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 1, 2, false, proportional) == doctest::Approx(0.4));
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 1, 3, false, proportional) == doctest::Approx(0.5));
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 1, 1, false, proportional) == doctest::Approx(0.2));
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 1, 8, false, proportional) == doctest::Approx(1.2));
  // Backward: 2 x forward unless measured.
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 0, 2, true, proportional) == doctest::Approx(0.4));
  CHECK(*profile.layer_seconds("V100-SXM2-16GB", 1, 0, 4, true, proportional) == doctest::Approx(0.5));
  CHECK_FALSE(profile.layer_seconds("T4", 1, 0, 4, false, proportional).has_value());
  CHECK_THROWS_AS(profile.add({"V100-SXM2-16GB", 1, 4, {1, 1, 1}, {}}), InputError);
}

TEST_CASE("layer profile: four or more measured micro-batches interpolate monotonically (PCHIP)")
{
  // Per-layer time of a layer whose fixed part dominates at small batches, as measured kernels show.
  const LayerProfile::BatchCurve proportional = [](double batch) { return batch; };
  LayerProfile profile;
  const std::vector<std::pair<int, double>> measured = {{1, 1.0}, {2, 1.1}, {4, 1.5}, {8, 3.0}, {16, 6.2}};
  for (const auto& [batch, seconds] : measured)
    profile.add({"T4", 1, batch, {seconds}, {}});
  for (const auto& [batch, seconds] : measured)
    CHECK(*profile.layer_seconds("T4", 1, 0, batch, false, proportional) == doctest::Approx(seconds));
  // Between measurements: no overshoot, never decreasing; a straight line through (4, 1.5) and (8, 3.0) would
  // not know that 2 -> 4 grew slower than 4 -> 8.
  double last = 0;
  for (double batch = 1; batch <= 16; batch += 0.25) {
    const double seconds = *profile.layer_seconds("T4", 1, 0, batch, false, proportional);
    CHECK(seconds >= last);
    last = seconds;
  }
  const double at6 = *profile.layer_seconds("T4", 1, 0, 6, false, proportional);
  CHECK(at6 > 1.5);
  CHECK(at6 < 3.0);
  CHECK(at6 != doctest::Approx(2.25)); // not the straight line
}

TEST_CASE("layer profile: one measured micro-batch scales along the cost model's own curve")
{
  // The model's time of a layer has a fixed part (kernel launches, part-empty waves) and a per-sample part, so
  // the time per sequence falls with the batch instead of staying at what one sequence took.
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(2));
  const Cluster cluster           = v100_and_t4();
  const GpuSpec& v100             = cluster.gpu_of(0);
  LayerProfile profile;
  profile.add({"V100-SXM2-16GB", 1, 1, {0.001, 0.01, 0.01, 0.02}, {}});
  const ComputeModel plain;
  const ComputeModel profiled(nullptr, &profile);
  CHECK(profiled.profiled(v100, 1));
  CHECK_FALSE(profiled.profiled(v100, 2));
  CHECK_FALSE(plain.profiled(v100, 1));
  for (int batch : {1, 2, 8, 32}) {
    const double model_ratio = plain.layers_seconds(v100, workload, 1, 2, 1, batch, Dtype::fp16, false) /
                               plain.layers_seconds(v100, workload, 1, 2, 1, 1, Dtype::fp16, false);
    CHECK(profiled.layers_seconds(v100, workload, 1, 2, 1, batch, Dtype::fp16, false) ==
          doctest::Approx(0.01 * model_ratio));
  }
  // At 32 sequences of 1,024 tokens the fixed part is spent once, not 32 times.
  const double at32 = profiled.layers_seconds(v100, workload, 1, 2, 1, 32, Dtype::fp16, false);
  CAPTURE(at32);
  CHECK(at32 < 32 * 0.01 * 0.9);
  CHECK(at32 > 32 * 0.01 * 0.5);
}

TEST_CASE("layer profile: a layer the model prices at nothing scales its measurement with the batch")
{
  // A no-op, a reshape or a loss given in a layer list has 0 FLOPs: the model's curve is 0 at every batch, so
  // the ratio along it is 0 / 0. The measured time must come through, finite, at any batch.
  models::Workload workload = three_layers();
  workload.layers[1].forward_flops_per_sample  = 0;
  workload.layers[1].backward_flops_per_sample = 0;
  const Cluster cluster = v100_and_t4();
  const GpuSpec& v100   = cluster.gpu_of(0);
  LayerProfile profile;
  profile.add({"V100-SXM2-16GB", 1, 2, {0.01, 0.001, 0.01}, {}});
  const ComputeModel profiled(nullptr, &profile);
  for (bool backward : {false, true}) {
    CHECK(profiled.layers_seconds(v100, workload, 1, 2, 1, 2, Dtype::fp16, backward) ==
          doctest::Approx(backward ? 0.002 : 0.001));
    CHECK(profiled.layers_seconds(v100, workload, 1, 2, 1, 1, Dtype::fp16, backward) ==
          doctest::Approx(backward ? 0.001 : 0.0005));
    CHECK(profiled.layers_seconds(v100, workload, 1, 2, 1, 8, Dtype::fp16, backward) ==
          doctest::Approx(backward ? 0.008 : 0.004));
  }
}

TEST_CASE("layer profile: the compute model uses it where it covers, the roofline elsewhere")
{
  const auto workload   = three_layers();
  const Cluster cluster = v100_and_t4();
  LayerProfile profile;
  profile.add({"V100-SXM2-16GB", 1, 4, {0.1, 0.2, 0.3}, {}});
  const ComputeModel plain;
  const ComputeModel profiled(nullptr, &profile);
  const GpuSpec& v100 = cluster.gpu_of(0);
  const GpuSpec& t4   = cluster.gpu_of(1);
  CHECK(profiled.layers_seconds(v100, workload, 0, 3, 1, 4, Dtype::fp16, false) == doctest::Approx(0.6));
  CHECK(profiled.layers_seconds(v100, workload, 1, 3, 1, 4, Dtype::fp16, true, true) == doctest::Approx(1.5));
  // Not covered: T4, or V100 at tp 2.
  CHECK(profiled.layers_seconds(t4, workload, 0, 3, 1, 4, Dtype::fp16, false) ==
        doctest::Approx(3 * plain.compute_seconds(t4, 1e12 * 4, Dtype::fp16, 4096)));
  CHECK(profiled.layers_seconds(v100, workload, 0, 3, 2, 4, Dtype::fp16, true) ==
        doctest::Approx(3 * plain.compute_seconds(v100, 2e12 * 4 / 2, Dtype::fp16, 4096)));
}

TEST_CASE("layer profile files: aliases resolve, mistakes name the file and the field")
{
  const auto workload   = three_layers();
  const Cluster cluster = v100_and_t4();
  const hetsim::test::TempFolder scratch("profile");
  const auto good =
      scratch.write("good.json", R"([{"gpu": "V100", "tp": 1, "micro_batch": 2, "layer_forward_s": [0.1, 0.2, 0.3]},
                                              {"gpu": "T4-16GB", "micro_batch": 2, "layer_forward_s": [1, 2, 3],
                                               "layer_backward_s": [2, 4, 6]}])");
  const LayerProfile profile = load_layer_profile(good, workload, cluster);
  CHECK(profile.covers("V100-SXM2-16GB", 1));
  CHECK(*profile.layer_seconds("T4", 1, 2, 2, true, [](double batch) { return batch; }) == doctest::Approx(6));

  auto message = [&](const std::string& text) {
    const auto file = scratch.write("bad.json", text);
    try {
      load_layer_profile(file, workload, cluster);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(R"({"gpu": "V100", "micro_batch": 2, "layer_forward_s": [0.1, 0.2]})")
            .find("layer_forward_s: expected an array of 3 seconds") != std::string::npos);
  CHECK(message(R"({"gpu": "A100", "micro_batch": 2, "layer_forward_s": [1, 2, 3]})")
            .find("gpu: expected a GPU of cluster 'two'") != std::string::npos);
  CHECK(message(R"({"gpu": "V100", "micro_batch": 0, "layer_forward_s": [1, 2, 3]})").find("micro_batch") !=
        std::string::npos);
  CHECK(message(R"({"gpu": "V100", "micro_batch": 2, "layer_forward_s": [1, 2, 3], "speed": 1})").find("speed") !=
        std::string::npos);
  CHECK(message(R"([{"gpu": "V100", "micro_batch": 2, "layer_forward_s": [1, 2, 3]},
                   {"gpu": "V100", "micro_batch": 2, "layer_forward_s": [1, 2, 3]}])")
            .find("[1]") != std::string::npos);
}
