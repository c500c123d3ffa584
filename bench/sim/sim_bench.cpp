/// Simulator benchmarks: building the SimGrid platform of a cluster, and replaying a synthetic schedule.
///
/// SimGrid runs one simulation per process, so every iteration runs in a forked child (sim::run_isolated) and
/// reports the time measured inside the child (manual time): the fork itself is not counted.

#include "core/cluster.hpp"
#include "core/units.hpp"
#include "sim/platform/platform.hpp"
#include "sim/replay/engine.hpp"
#include "sim/replay/isolate.hpp"
#include "sim/replay/replay.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "tests/sim/sim_fixtures.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace hetsim;
using strategies::Stream;
using strategies::TaskKind;

/// `devices` GPUs in 8-GPU nodes (NVLink-class ports, 200 Gb/s NICs), one region.
Cluster cluster_of(int devices)
{
  return sim::testing::uniform_cluster(devices / 8, 8, Link{300e9, 2 * units::kMicrosecond},
                                       Link{200 * units::kGbps, 5 * units::kMicrosecond}, 10 * units::kMicrosecond);
}

double seconds_since(std::chrono::steady_clock::time_point start)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_PlatformBuild(benchmark::State& state)
{
  const Cluster cluster = cluster_of(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const std::string elapsed = sim::run_isolated([&] {
      sim::Engine engine;
      const auto start = std::chrono::steady_clock::now();
      sim::Platform platform(cluster);
      benchmark::DoNotOptimize(platform.link_count());
      return std::to_string(seconds_since(start));
    });
    state.SetIterationTime(std::stod(elapsed));
  }
  state.counters["devices"] = static_cast<double>(cluster.device_count());
}
BENCHMARK(BM_PlatformBuild)->Arg(64)->Arg(512)->Arg(4096)->UseManualTime()->Unit(benchmark::kMillisecond);

/// A Megatron-like iteration without lowering: per micro-batch, compute then a tensor-parallel all-reduce inside
/// each node, then an activation send to the same GPU of the next node (a pipeline hop); at the end a
/// data-parallel ring all-reduce per local rank across all nodes.
strategies::Schedule synthetic_schedule(const Cluster& cluster, int micro_batches)
{
  const int devices = cluster.device_count();
  const int nodes   = devices / 8;
  sim::testing::ScheduleBuilder builder(devices);
  auto deps_of = [](int task) { return task >= 0 ? std::vector<int>{task} : std::vector<int>{}; };
  std::vector<int> last(devices, -1);
  for (int mb = 0; mb < micro_batches; ++mb) {
    for (int d = 0; d < devices; ++d)
      last[d] = builder.compute(d, 1e-3, deps_of(last[d])); // seconds, see seconds_from_flops()
    for (int n = 0; n < nodes; ++n) {
      std::vector<int> members;
      std::vector<std::vector<int>> deps;
      for (int l = 0; l < 8; ++l) {
        members.push_back(n * 8 + l);
        deps.push_back(deps_of(last[n * 8 + l]));
      }
      const auto ids = builder.collective(TaskKind::all_reduce, members, 16e6, strategies::CollectiveAlgorithm::ring,
                                          Stream::tensor_parallel, deps);
      for (std::size_t i = 0; i < members.size(); ++i)
        last[members[i]] = ids[i];
    }
    for (int d = 0; d < devices; ++d)
      builder.send_recv(d, (d + 8) % devices, 8e6, deps_of(last[d]));
  }
  for (int l = 0; l < 8; ++l) {
    std::vector<int> members;
    std::vector<std::vector<int>> deps;
    for (int n = 0; n < nodes; ++n) {
      members.push_back(n * 8 + l);
      deps.push_back(deps_of(last[n * 8 + l]));
    }
    builder.collective(TaskKind::all_reduce, members, 100e6, strategies::CollectiveAlgorithm::ring,
                       Stream::data_parallel, deps);
  }
  return builder.schedule();
}

void BM_ReplaySynthetic(benchmark::State& state)
{
  const Cluster cluster               = cluster_of(static_cast<int>(state.range(0)));
  const strategies::Schedule schedule = synthetic_schedule(cluster, 8);
  const sim::ReplayOptions options    = sim::testing::seconds_from_flops();
  for (auto _ : state) {
    const std::string elapsed = sim::run_isolated([&] {
      const auto start = std::chrono::steady_clock::now();
      sim::Engine engine;
      sim::Platform platform(cluster);
      benchmark::DoNotOptimize(sim::replay(engine, platform, schedule, options));
      return std::to_string(seconds_since(start));
    });
    state.SetIterationTime(std::stod(elapsed));
  }
  state.counters["tasks"] = static_cast<double>(schedule.tasks.size());
}
BENCHMARK(BM_ReplaySynthetic)->Arg(64)->Arg(512)->UseManualTime()->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
