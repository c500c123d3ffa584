/// The largest jobs, replayed as `hetsim simulate` replays them by default (devices folded:
/// strategies/lowering/fold.hpp; a 1F1B steady state repeated: sim/simulate/steady_state.hpp; links recorded, no
/// trace). Wall time (the simulation runs in a child process) and the child's peak memory.
///
/// Goals: Llama-2-70B on 768 A100 (preset llama-2-70b-768) < 5 s and < 1 GiB; Megatron's 1T GPT on 3,072 A100
/// (preset megatron-1t-3072) < 20 s and < 4 GiB; Llama 3.1 405B on 16,384 H100 (preset llama-3-405b-16k)
/// < 120 s and < 8 GiB; its 131,072-token stage with context parallelism 16 (preset llama-3-405b-cp16, 133 M
/// tasks unfolded) replays; the same Llama 3.1 405B plan at dp 1,024 on 131,072 H100 (16,384 nodes) < 15 s; the
/// world-wide geo default scenario no slower than before folding (0.17 s); and the same
/// model and stage layout at 8 and at 64 replicas (Llama-2-70B, tp 8 x pp 12, 32 micro-batches per replica) within
/// a factor 2 (counter `d64_over_d8`).

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <sys/resource.h>

namespace {

using namespace hetsim;

double children_peak_rss_gib()
{
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss / (1024.0 * 1024.0); // KiB on Linux
}

/// What one replay did: the schedule's tasks, and the micro-batches per replica it replayed of those it has.
struct ReplayCounts {
  std::size_t tasks          = 0;
  int micro_batches          = 0;
  int replayed_micro_batches = 0;
};

/// Lowers (folded) and replays one iteration as `hetsim simulate` does; returns the simulated iteration time.
double simulate_default(const strategies::Plan& plan, const strategies::Problem& problem,
                        ReplayCounts* counts = nullptr)
{
  const strategies::Schedule schedule = strategies::lower_for_replay(plan, problem, false);
  sim::SimOptions options;
  options.trace                = false;
  options.links                = true;
  const sim::SimResult result = sim::simulate(plan, problem, schedule, options);
  if (counts) {
    counts->tasks         = schedule.tasks.size();
    counts->micro_batches = plan.grad_accum.front();
    counts->replayed_micro_batches =
        result.repeated && result.repeated->period_s > 0 ? result.repeated->replayed : counts->micro_batches;
  }
  return result.report.iteration_time_s;
}

/// Replays the plan each iteration of the benchmark, with its counters.
void replay_counting(benchmark::State& state, const Cluster& cluster, const strategies::Plan& plan,
                     const strategies::Problem& problem)
{
  double iteration_s = 0;
  ReplayCounts counts;
  for (auto _ : state)
    iteration_s = simulate_default(plan, problem, &counts);
  state.counters["devices"]                = cluster.device_count();
  state.counters["tasks"]                  = static_cast<double>(counts.tasks);
  state.counters["micro_batches"]          = counts.micro_batches;
  state.counters["replayed_micro_batches"] = counts.replayed_micro_batches;
  state.counters["simulated_iteration_s"]  = iteration_s;
  state.counters["child_peak_rss_GiB"]     = children_peak_rss_gib();
}

void preset(benchmark::State& state, const char* cluster_preset, const char* model_preset, const char* plan_preset)
{
  const Cluster cluster = load_cluster(cluster_preset);
  // At the plan's sequence length, when it names one (the long-context stage), as `hetsim simulate` loads it.
  models::Workload workload = models::load_workload(model_preset);
  if (const int seq_len = strategies::seq_len_for_plan(plan_preset, 0); seq_len != 0)
    workload = models::with_seq_len(workload, seq_len, std::string(plan_preset) + ": seq_len");
  const strategies::Plan plan = strategies::load_plan(plan_preset, cluster, workload);
  replay_counting(state, cluster, plan, strategies::problem_for_plan(cluster, workload, plan));
}

/// DGX A100 nodes for `replicas` replicas of Llama-2-70B at tp 8 x pp 12.
Cluster dgx_cluster(int replicas)
{
  const nlohmann::json json{
      {"name", "dgx_a100_x" + std::to_string(replicas)},
      {"regions",
       {{{"name", "fabric"},
         {"latency_us", 2},
         {"nodes",
          {{{"name", "dgx"},
            {"gpu", "A100-SXM4-80GB"},
            {"devices", 8},
            {"repeat", 12 * replicas},
            {"intra_node", {{"bandwidth_GBps", 300}, {"latency_us", 2}}},
            {"nic", {{"bandwidth_gbps", 1600}, {"latency_us", 3}}}}}}}}}};
  return cluster_from_json(json, "scale_bench cluster");
}

/// Llama 3.1 405B as on h100_16384 (tp 8, pp 16, ZeRO-1, recompute, micro-batches of one 8,192-token sequence)
/// at dp 1,024 on 16,384 such nodes, global batch 16,384: what grows with dp is the data-parallel rings' members.
void llama3_405b_131k(benchmark::State& state)
{
  nlohmann::json json = nlohmann::json::parse(R"({"name": "h100_131072", "regions": [{"name": "fabric",
      "latency_us": 2, "nodes": [{"name": "h100", "gpu": "H100-SXM5-80GB", "devices": 8, "repeat": 16384,
      "intra_node": {"bandwidth_GBps": 450, "latency_us": 2}, "nic": {"bandwidth_gbps": 3200, "latency_us": 3}}]}]})");
  const Cluster cluster           = cluster_from_json(json, "scale_bench cluster");
  const models::Workload workload = models::load_workload("preset:llama-3.1-405b");
  const auto plan                 = strategies::plan_from_json(
      {{"tp", 8}, {"pp", 16}, {"dp", 1024}, {"micro_batch", 1}, {"global_batch", 16384}, {"zero_stage", 1},
       {"recompute", true}, {"dtype", "bf16"}},
      "scale_bench plan", cluster, workload);
  replay_counting(state, cluster, plan, strategies::problem_for_plan(cluster, workload, plan));
}

void data_parallel_growth(benchmark::State& state)
{
  const models::Workload workload = models::load_workload("preset:llama-2-70b");
  double seconds[2]               = {0, 0};
  for (auto _ : state) {
    int k = 0;
    for (int replicas : {8, 64}) {
      const Cluster cluster = dgx_cluster(replicas);
      const auto plan       = strategies::plan_from_json(
          {{"tp", 8}, {"pp", 12}, {"dp", replicas}, {"micro_batch", 1}, {"grad_accum", 32}, {"zero_stage", 1},
           {"dtype", "bf16"}},
          "scale_bench plan", cluster, workload);
      const auto problem = strategies::problem_for_plan(cluster, workload, plan);
      const auto start   = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(simulate_default(plan, problem));
      seconds[k++] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  state.counters["d8_s"]        = seconds[0];
  state.counters["d64_s"]       = seconds[1];
  state.counters["d64_over_d8"] = seconds[1] / seconds[0];
}

} // namespace

BENCHMARK_CAPTURE(preset, default_gpt3_1_3b_case5, "preset:case5_worldwide_geo", "preset:gpt3-1.3b",
                  "preset:gpt3-1.3b-case5")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2);
BENCHMARK_CAPTURE(preset, llama2_70b_768, "preset:dgx_a100_768", "preset:llama-2-70b", "preset:llama-2-70b-768")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(preset, megatron_1t_3072, "preset:dgx_a100_3072", "preset:megatron-gpt-1t",
                  "preset:megatron-1t-3072")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(preset, llama3_405b_16k, "preset:h100_16384", "preset:llama-3.1-405b", "preset:llama-3-405b-16k")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(preset, llama3_405b_cp16, "preset:h100_16384", "preset:llama-3.1-405b", "preset:llama-3-405b-cp16")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(llama3_405b_131k)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK(data_parallel_growth)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

BENCHMARK_MAIN();
