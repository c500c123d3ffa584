/// The decentralized-training scheduler's hot paths on the world-wide preset (64 V100 in 8 regions): the
/// bottleneck matching of two 64-device groups, the cost of one assignment, and a full genetic search.

#include "core/cluster_json.hpp"
#include "strategies/planners/dtfm/bottleneck_matching.hpp"
#include "strategies/planners/dtfm/dtfm_cost.hpp"
#include "strategies/planners/dtfm/dtfm_genetic.hpp"

#include <benchmark/benchmark.h>

#include <random>

namespace {

using namespace hetsim;
using namespace hetsim::strategies;

/// GPT-3 XL in 8 stages, global batch 1024 over 8 replicas: 3 layers of gradients, 128 sequences of activations.
constexpr TaskletVolumes kVolumes{3 * 50.3e6 * 2, 128 * 2048 * 2048 * 2.0};

const CommGraph& worldwide_graph()
{
  static const CommGraph graph = comm_graph(load_cluster("preset:case5_worldwide_geo"));
  return graph;
}

void bm_bottleneck_matching_64(benchmark::State& state)
{
  // Two groups of 64 drawn from a 128-device pair cost matrix of the world-wide preset, twice over.
  const CommGraph& g = worldwide_graph();
  std::mt19937_64 rng(1);
  std::vector<double> cost(64 * 64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c)
      cost[r * 64 + c] = 2 * (g.latency_s[r * 64 + c] + kVolumes.pipeline_bytes * g.seconds_per_byte[r * 64 + c]) *
                         (1 + 1e-3 * static_cast<double>(rng() % 1000)); // distinct values: the hardest search
  for (auto _ : state)
    benchmark::DoNotOptimize(bottleneck_matching(cost, 64));
}
BENCHMARK(bm_bottleneck_matching_64)->Unit(benchmark::kMicrosecond);

void bm_assignment_cost_64(benchmark::State& state)
{
  const DtfmCost cost(worldwide_graph(), 8, 8, kVolumes);
  std::mt19937_64 rng(1);
  const Assignment x = random_assignment(64, rng);
  for (auto _ : state)
    benchmark::DoNotOptimize(cost.cost(x));
}
BENCHMARK(bm_assignment_cost_64)->Unit(benchmark::kMicrosecond);

void bm_genetic_search_case5(benchmark::State& state)
{
  const DtfmCost cost(worldwide_graph(), 8, 8, kVolumes);
  GeneticOptions options; // the planner's defaults
  for (auto _ : state)
    benchmark::DoNotOptimize(genetic_search(cost, options));
}
BENCHMARK(bm_genetic_search_case5)->Unit(benchmark::kMillisecond)->Iterations(1);

/// Other pipeline depths of the planner's sweep over shapes (pp x dp = 64), argument pp.
void bm_genetic_search_shape(benchmark::State& state)
{
  const int pp = static_cast<int>(state.range(0));
  const DtfmCost cost(worldwide_graph(), pp, 64 / pp, kVolumes);
  GeneticOptions options;
  for (auto _ : state)
    benchmark::DoNotOptimize(genetic_search(cost, options));
}
BENCHMARK(bm_genetic_search_shape)->Arg(1)->Arg(2)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

BENCHMARK_MAIN();
