/// End-to-end replay benchmarks of real scenarios: load presets, lower the plan, replay one iteration.
///
/// Goals: the default scenario (GPT-3 1.3B on case5_worldwide_geo, 64 V100) < 0.5 s; Llama-2-70B on 768 A100
/// (tp 8, pp 12, dp 8, 1F1B, global batch 256 x 4,096) < 20 s and < 4 GiB peak memory. The simulation runs in
/// a child process, so its peak memory is read from getrusage(RUSAGE_CHILDREN) and reported as a counter.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/plan_json.hpp"

#include <benchmark/benchmark.h>

#include <sys/resource.h>

namespace {

using namespace hetsim;

struct Scenario {
  Cluster cluster;
  models::Workload workload;
  strategies::Plan plan;
  strategies::Problem problem;

  Scenario(const char* cluster_preset, const char* model_preset, const char* plan_preset)
      : cluster(load_cluster(cluster_preset)), workload(models::load_workload(model_preset)),
        plan(strategies::load_plan(plan_preset, cluster, workload))
  {
    problem.cluster      = &cluster;
    problem.workload     = &workload;
    problem.global_batch = static_cast<int>(plan.global_batch());
    problem.dtype        = plan.dtype;
  }
};

double children_peak_rss_gib()
{
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss / (1024.0 * 1024.0); // ru_maxrss is in KiB on Linux
}

void replay(benchmark::State& state, const char* cluster, const char* model, const char* plan, bool analytic_intra)
{
  const Scenario scenario(cluster, model, plan);
  sim::SimOptions options;
  options.analytic_intra_node = analytic_intra;
  double iteration_s          = 0;
  std::size_t tasks           = 0;
  for (auto _ : state) {
    const auto schedule = strategies::lower(scenario.plan, scenario.problem);
    tasks               = schedule.tasks.size();
    iteration_s = sim::simulate(scenario.plan, scenario.problem, schedule, options).report.iteration_time_s;
  }
  state.counters["simulated_iteration_s"] = iteration_s;
  state.counters["tasks"]                 = static_cast<double>(tasks);
  state.counters["child_peak_rss_GiB"]    = children_peak_rss_gib();
}

void lower_only(benchmark::State& state, const char* cluster, const char* model, const char* plan)
{
  const Scenario scenario(cluster, model, plan);
  for (auto _ : state)
    benchmark::DoNotOptimize(strategies::lower(scenario.plan, scenario.problem));
}

} // namespace

BENCHMARK_CAPTURE(replay, default_gpt3_1_3b_case5, "preset:case5_worldwide_geo", "preset:gpt3-1.3b",
                  "preset:gpt3-1.3b-case5", false)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2);
BENCHMARK_CAPTURE(lower_only, llama2_70b_768, "preset:dgx_a100_768", "preset:llama-2-70b", "preset:llama-2-70b-768")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay, llama2_70b_768_flows, "preset:dgx_a100_768", "preset:llama-2-70b",
                  "preset:llama-2-70b-768", false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(replay, llama2_70b_768_analytic_intra_node, "preset:dgx_a100_768", "preset:llama-2-70b",
                  "preset:llama-2-70b-768", true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK_MAIN();
