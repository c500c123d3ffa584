/// Planner speed: Poplar's profiling and allocation on 1,024 mixed devices, OSDP's search on 96 operators.

#include "core/units.hpp"
#include "models/transformer.hpp"
#include "strategies/planners/osdp/osdp_search.hpp"
#include "strategies/planners/poplar/poplar.hpp"
#include "strategies/planners/registry.hpp"

#include <benchmark/benchmark.h>

#include <numeric>

using namespace hetsim;

namespace {

/// 128 nodes of 8, four GPU types in turn.
Cluster mixed_cluster(int nodes)
{
  const char* types[] = {"A100-SXM4-80GB", "A100-PCIe-40GB", "V100-SXM2-32GB", "T4"};
  Cluster cluster("mixed");
  const int region = cluster.add_region("dc", 5 * units::kMicrosecond);
  for (int n = 0; n < nodes; ++n) {
    const int gpu  = cluster.add_gpu(*find_catalog_gpu(types[n % 4]));
    const int node = cluster.add_node(region, "node" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < 8; ++d)
      cluster.add_device(node, gpu);
  }
  return cluster;
}

models::Workload gpt(int layers, bool split)
{
  models::TransformerShape shape;
  shape.name = "gpt", shape.family = "gpt2", shape.layers = layers, shape.hidden = 1024, shape.heads = 16;
  shape.kv_heads = 16, shape.intermediate = 4096, shape.vocab = 50257, shape.seq_len = 1024;
  shape.max_positions = 1024, shape.flash_attention = true, shape.split_blocks = split;
  return models::build_transformer(shape);
}

/// Profiling (cost model) and Algorithm 2 for 1,024 devices of four types, at ZeRO-0 and ZeRO-3.
void BM_PoplarAllocation1024(benchmark::State& state)
{
  const Cluster cluster           = mixed_cluster(128);
  const models::Workload workload = gpt(24, false);
  strategies::Problem problem;
  problem.cluster      = &cluster;
  problem.workload     = &workload;
  problem.global_batch = 16384;
  const int stage      = static_cast<int>(state.range(0));
  for (auto _ : state) {
    strategies::CostModelProfiler profiler(problem, costmodel::ComputeModel());
    auto result = strategies::plan_poplar(problem, profiler, stage);
    benchmark::DoNotOptimize(result.plan.micro_batch.data());
  }
}
BENCHMARK(BM_PoplarAllocation1024)->Arg(0)->Arg(3)->Unit(benchmark::kMillisecond);

/// The whole OSDP planner (every micro-batch size, each with its search) on 96 operators (48 blocks split
/// into attention and MLP) under an 8 GiB limit.
void BM_OsdpSearch96(benchmark::State& state)
{
  Cluster cluster("8");
  const int gpu    = cluster.add_gpu(*find_catalog_gpu("A100-SXM4-40GB"));
  const int region = cluster.add_region("dc", 5e-6);
  for (int n = 0; n < 2; ++n) {
    const int node = cluster.add_node(region, "n" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < 4; ++d)
      cluster.add_device(node, gpu);
  }
  const models::Workload workload = gpt(48, true);
  strategies::Problem problem;
  problem.cluster            = &cluster;
  problem.workload           = &workload;
  problem.global_batch       = 128;
  problem.memory_limit_bytes = 8 * units::kGiB;
  const auto planner         = strategies::make_osdp_planner();
  for (auto _ : state) {
    auto candidates = planner->propose(problem, strategies::PlannerContext());
    benchmark::DoNotOptimize(candidates.data());
  }
}
BENCHMARK(BM_OsdpSearch96)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
