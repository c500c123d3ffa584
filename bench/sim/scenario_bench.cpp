/// End-to-end replay benchmarks of real scenarios: load presets, lower the plan, replay one iteration.
///
/// Goals: the default scenario (GPT-3 1.3B on case5_worldwide_geo, 64 V100) < 0.5 s; Llama-2-70B on 768 A100
/// (tp 8, pp 12, dp 8, 1F1B, global batch 256 x 4,096) < 20 s and < 4 GiB peak memory. The simulation runs in
/// a child process, so its peak memory is read from getrusage(RUSAGE_CHILDREN) and reported as a counter.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

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
        plan(strategies::load_plan(plan_preset, cluster, workload)),
        problem(strategies::problem_for_plan(cluster, workload, plan))
  {
  }
};

/// Point-to-point transfers a schedule implies with step-by-step ring collectives, split by whether they stay in
/// one node: where replay time goes (each transfer costs the simulator a few microseconds).
void count_ring_transfers(const Cluster& cluster, const strategies::Schedule& schedule, benchmark::State& state)
{
  double intra = 0, inter = 0;
  for (const auto& c : schedule.collectives) {
    const double n     = static_cast<double>(c.devices.size());
    const double steps = c.kind == strategies::TaskKind::all_reduce ? 2 * (n - 1) : n - 1;
    bool one_node      = true;
    for (int d : c.devices)
      one_node = one_node && cluster.device(d).node == cluster.device(c.devices.front()).node;
    (one_node ? intra : inter) += steps * n;
  }
  for (const auto& t : schedule.tasks)
    if (t.kind == strategies::TaskKind::send)
      (cluster.device(t.device).node == cluster.device(t.peer).node ? intra : inter) += 1;
  state.counters["transfers_intra_node"] = intra;
  state.counters["transfers_inter_node"] = inter;
}

double children_peak_rss_gib()
{
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss / (1024.0 * 1024.0); // ru_maxrss is in KiB on Linux
}

/// How collectives become flows in a replay benchmark.
enum class Flows { step_by_step, pipelined_rings, analytic_intra_node };

void replay(benchmark::State& state, const char* cluster, const char* model, const char* plan, Flows flows,
            bool trace)
{
  const Scenario scenario(cluster, model, plan);
  sim::SimOptions options;
  options.analytic_intra_node = flows == Flows::analytic_intra_node;
  options.pipelined_rings     = flows == Flows::pipelined_rings;
  options.trace               = trace;
  double iteration_s          = 0;
  std::size_t tasks           = 0;
  for (auto _ : state) {
    const auto schedule = strategies::lower(scenario.plan, scenario.problem);
    tasks               = schedule.tasks.size();
    iteration_s = sim::simulate(scenario.plan, scenario.problem, schedule, options).report.iteration_time_s;
  }
  count_ring_transfers(scenario.cluster, strategies::lower(scenario.plan, scenario.problem), state);
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
                  "preset:gpt3-1.3b-case5", Flows::step_by_step, true)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2);
BENCHMARK_CAPTURE(lower_only, llama2_70b_768, "preset:dgx_a100_768", "preset:llama-2-70b", "preset:llama-2-70b-768")
    ->Unit(benchmark::kMillisecond);
// As `hetsim simulate` runs them without --trace; the last one adds the cost of building the 1.5M-event trace.
BENCHMARK_CAPTURE(replay, llama2_70b_768_flows, "preset:dgx_a100_768", "preset:llama-2-70b",
                  "preset:llama-2-70b-768", Flows::step_by_step, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(replay, llama2_70b_768_pipelined_rings, "preset:dgx_a100_768", "preset:llama-2-70b",
                  "preset:llama-2-70b-768", Flows::pipelined_rings, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(replay, llama2_70b_768_analytic_intra_node, "preset:dgx_a100_768", "preset:llama-2-70b",
                  "preset:llama-2-70b-768", Flows::analytic_intra_node, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(replay, llama2_70b_768_pipelined_rings_with_trace, "preset:dgx_a100_768",
                  "preset:llama-2-70b", "preset:llama-2-70b-768", Flows::pipelined_rings, true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK_MAIN();
