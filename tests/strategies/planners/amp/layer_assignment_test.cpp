#include "strategies/planners/amp/layer_assignment.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace hetsim::strategies;

namespace {

/// Random stage-specific layer times (stages run on different GPU types), random boundary costs and a random
/// per-stage layer budget standing in for memory.
struct RandomInstance {
  int layers = 0, stages = 0, micro_batches = 0;
  std::vector<std::vector<double>> layer_s; ///< [stage][layer]
  std::vector<std::vector<double>> cut_s;   ///< [stage][cut]
  std::vector<int> max_layers;              ///< per stage

  explicit RandomInstance(std::mt19937_64& rng)
  {
    layers        = 2 + static_cast<int>(rng() % 9);
    stages        = 1 + static_cast<int>(rng() % std::min(layers, 5));
    micro_batches = 1 + static_cast<int>(rng() % 8);
    auto unit     = [&] { return static_cast<double>(rng() % 1000 + 1) / 1000.0; };
    layer_s.assign(stages, std::vector<double>(layers));
    cut_s.assign(stages, std::vector<double>(layers + 1));
    for (int s = 0; s < stages; ++s) {
      const double speed = 0.5 + unit();
      for (int l = 0; l < layers; ++l)
        layer_s[s][l] = unit() / speed;
      for (int c = 0; c <= layers; ++c)
        cut_s[s][c] = unit() * 0.5;
      max_layers.push_back(1 + static_cast<int>(rng() % layers));
    }
  }

  double unchecked(int s, int first, int end) const
  {
    double t = 0;
    for (int l = first; l < end; ++l)
      t += layer_s[s][l];
    return t;
  }

  /// With `monotone`, the table is also told the time without the memory check (its two-pointer sweep).
  StageCostModel model(bool monotone = false) const
  {
    StageCostModel costs{[this](int s, int first, int end) {
                           if (end - first > max_layers[s])
                             return std::numeric_limits<double>::infinity();
                           return unchecked(s, first, end);
                         },
                         [this](int s, int cut) { return cut_s[s][cut]; }};
    if (monotone)
      costs.unchecked_seconds = [this](int s, int first, int end) { return unchecked(s, first, end); };
    return costs;
  }
};

/// Every way to cut `layers` into `stages` non-empty contiguous stages; the best finite cost, or infinity.
double brute_force(const RandomInstance& instance)
{
  const auto costs = instance.model();
  double best      = std::numeric_limits<double>::infinity();
  std::vector<int> starts{0};
  auto recurse = [&](auto&& self, int next_first) -> void {
    if (static_cast<int>(starts.size()) == instance.stages) {
      best = std::min(best, assignment_cost(starts, instance.layers, instance.micro_batches, costs));
      return;
    }
    const int left = instance.stages - static_cast<int>(starts.size());
    for (int first = next_first; first <= instance.layers - left; ++first) {
      starts.push_back(first);
      self(self, first + 1);
      starts.pop_back();
    }
  };
  recurse(recurse, 1);
  return best;
}

} // namespace

TEST_CASE("layer assignment: the DP finds the brute-force optimum on random instances")
{
  std::mt19937_64 rng(20261121);
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const RandomInstance instance(rng);
    const double expected = brute_force(instance);
    const auto result     = assign_layers(instance.layers, instance.stages, instance.micro_batches, instance.model());
    if (!std::isfinite(expected)) {
      CHECK_FALSE(result.has_value());
      continue;
    }
    ++feasible;
    REQUIRE(result.has_value());
    CHECK(result->cost_s == doctest::Approx(expected).epsilon(1e-12));
    // The reported assignment really has the reported cost and is well formed.
    REQUIRE(static_cast<int>(result->stage_starts.size()) == instance.stages);
    CHECK(result->stage_starts.front() == 0);
    for (int s = 1; s < instance.stages; ++s)
      CHECK(result->stage_starts[s] > result->stage_starts[s - 1]);
    CHECK(assignment_cost(result->stage_starts, instance.layers, instance.micro_batches, instance.model()) ==
          doctest::Approx(result->cost_s).epsilon(1e-12));
    // Asking the memory check once per position (its budget is monotone) finds the same optimum.
    const auto swept = assign_layers(instance.layers, instance.stages, instance.micro_batches, instance.model(true));
    REQUIRE(swept.has_value());
    CHECK(swept->cost_s == doctest::Approx(expected).epsilon(1e-12));
  }
  CHECK(feasible > 200); // the memory budgets leave most instances solvable
}

TEST_CASE("layer assignment: a faster stage gets more layers")
{
  // Stage 0 is three times faster than stage 1; 8 equal layers, one micro-batch per stage in flight many times.
  const StageCostModel costs{[](int s, int first, int end) { return (end - first) * (s == 0 ? 1.0 : 3.0); },
                             [](int, int) { return 0.0; }};
  const auto result = assign_layers(8, 2, 64, costs);
  REQUIRE(result.has_value());
  CHECK(result->stage_starts == std::vector<int>{0, 6});
}

TEST_CASE("layer assignment: more stages than layers has no solution")
{
  const StageCostModel costs{[](int, int first, int end) { return 1.0 * (end - first); }, [](int, int) { return 0.0; }};
  CHECK_FALSE(assign_layers(3, 4, 1, costs).has_value());
}

TEST_CASE("layer assignment: 10,000 layers on stages of three speeds, as balanced as one layer allows")
{
  // Before, the table over every layer ran for hours at this size (10^8 cells a stage); units of layers, then
  // each cut moved layer by layer, give what balancing by hand gives. Stage s runs a layer in speed[s] seconds;
  // stage 0 also holds an embedding of 50 layers' time, the last a head of 30.
  const std::vector<double> speed = {1.0, 2.0, 1.0, 3.0};
  const int layers                = 10'000;
  const StageCostModel costs{[&](int s, int first, int end) {
                               return (end - first) * speed[s] + (first == 0 ? 50.0 : 0.0) +
                                      (end == layers ? 30.0 : 0.0);
                             },
                             [](int, int) { return 0.0; }};
  const auto result = assign_layers(layers, 4, 1000, costs);
  REQUIRE(result.has_value());
  // The best bottleneck T solves sum_s (T - extra_s) / speed_s = layers; no stage can be a layer below it.
  double inverse = 0, extra = 0;
  for (int s = 0; s < 4; ++s)
    inverse += 1 / speed[s];
  extra = 50 / speed[0] + 30 / speed[3];
  const double bottleneck = (layers + extra) / inverse;
  double worst            = 0;
  for (int s = 0; s < 4; ++s) {
    const int end = s + 1 < 4 ? result->stage_starts[s + 1] : layers;
    worst         = std::max(worst, costs.stage_seconds(s, result->stage_starts[s], end));
  }
  CHECK(worst <= bottleneck + *std::max_element(speed.begin(), speed.end()));
  CHECK(assignment_cost(result->stage_starts, layers, 1000, costs) == doctest::Approx(result->cost_s));
}

TEST_CASE("layer assignment: up to kExactLayerCount layers the table is AMP's, over every layer")
{
  // At the bound the answer is the exact one: cuts at layer granularity that units of layers could not place.
  const int layers = kExactLayerCount;
  const StageCostModel costs{[](int s, int first, int end) { return (end - first) * (s == 0 ? 1.0 : 1.5) + 0.7; },
                             [](int, int cut) { return cut % 7 == 0 ? 0.0 : 0.01; }};
  const auto result = assign_layers(layers, 2, 16, costs);
  REQUIRE(result.has_value());
  double best = std::numeric_limits<double>::infinity();
  for (int cut = 1; cut < layers; ++cut)
    best = std::min(best, assignment_cost({0, cut}, layers, 16, costs));
  CHECK(result->cost_s == doctest::Approx(best).epsilon(1e-12));
}
