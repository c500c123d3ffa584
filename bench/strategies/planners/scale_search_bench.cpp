/// Search at the scale users plan for: each planner's analytic search of Llama 3.1 405B (8,192-token sequences,
/// bf16), as `hetsim search --top 0` runs it, on preset:h100_16384 (2,048 DGX H100 nodes) with a global batch of
/// 16,384 sequences and on 131,072 H100 (16,384 such nodes) with one sequence per GPU, 131,072 (the planners
/// that give every GPU the same micro-batch need one at least). Replaying the best plan is timed apart
/// (scale_bench, and docs/benchmarks.md for the plans found here).
///
/// Goals: every planner under 10 CPU-s and 1 GiB at 16,384 GPUs, under 60 CPU-s at 131,072
/// (docs/benchmarks.md, "Search at scale", for where each stands).
///
///   build/bench/scale_search_bench --benchmark_filter='16384/amp'

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/search.hpp"

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <sys/resource.h>

namespace {

using namespace hetsim;

/// 16,384 nodes of 8 H100 behind one fabric, as scale_bench's 131,072-GPU replay.
Cluster h100_131072()
{
  const auto json = nlohmann::json::parse(R"({"name": "h100_131072", "regions": [{"name": "fabric",
      "latency_us": 2, "nodes": [{"name": "h100", "gpu": "H100-SXM5-80GB", "devices": 8, "repeat": 16384,
      "intra_node": {"bandwidth_GBps": 450, "latency_us": 2}, "nic": {"bandwidth_gbps": 3200, "latency_us": 3}}]}]})");
  return cluster_from_json(json, "scale_search_bench cluster");
}

double peak_rss_gib()
{
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / (1024.0 * 1024.0); // KiB on Linux
}

void search_at(benchmark::State& state, const Cluster& cluster, int global_batch, const char* planner_name)
{
  const models::Workload workload = models::load_workload("preset:llama-3.1-405b");
  strategies::Problem problem;
  problem.cluster      = &cluster;
  problem.workload     = &workload;
  problem.global_batch = global_batch;
  problem.dtype        = strategies::choose_dtype("", "--dtype", cluster, workload);
  const auto planner   = strategies::find_planner(planner_name).make();
  long long candidates = 0;
  for (auto _ : state) {
    try {
      const auto result = strategies::search(*planner, problem, {});
      candidates        = static_cast<long long>(result.ranked.size());
    } catch (const std::exception& e) { // a planner may find no plan (random: none that fits); its time counts
      state.SetLabel(e.what());
    }
  }
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["peak_GiB"]   = peak_rss_gib();
}

void search_16384(benchmark::State& state, const char* planner)
{
  static const Cluster cluster = load_cluster("preset:h100_16384");
  search_at(state, cluster, 16384, planner);
}

void search_131072(benchmark::State& state, const char* planner)
{
  static const Cluster cluster = h100_131072();
  search_at(state, cluster, 131072, planner);
}

#define HETSIM_SEARCH_AT_SCALE(name, planner)                                                                    \
  BENCHMARK_CAPTURE(search_16384, name, planner)->Unit(benchmark::kSecond)->Iterations(1);                      \
  BENCHMARK_CAPTURE(search_131072, name, planner)->Unit(benchmark::kSecond)->Iterations(1)

HETSIM_SEARCH_AT_SCALE(amp, "amp");
HETSIM_SEARCH_AT_SCALE(hethub, "hethub");
HETSIM_SEARCH_AT_SCALE(megatron, "megatron");
HETSIM_SEARCH_AT_SCALE(random, "random");
HETSIM_SEARCH_AT_SCALE(poplar, "poplar");
HETSIM_SEARCH_AT_SCALE(deepspeed, "deepspeed");
HETSIM_SEARCH_AT_SCALE(whale, "whale");
HETSIM_SEARCH_AT_SCALE(osdp, "osdp");
HETSIM_SEARCH_AT_SCALE(dtfm, "dtfm");
HETSIM_SEARCH_AT_SCALE(zero3, "zero3");

} // namespace

BENCHMARK_MAIN();
