/// Simulator benchmarks: building the SimGrid platform of a cluster, and replaying a synthetic schedule.
///
/// SimGrid runs one simulation per process, so every iteration runs in a forked child (sim::run_isolated) and
/// reports the time measured inside the child (manual time): the fork itself is not counted.

#include "core/cluster.hpp"
#include "core/units.hpp"
#include "sim/engine.hpp"
#include "sim/isolate.hpp"
#include "sim/platform.hpp"
#include "sim/replay.hpp"
#include "strategies/plan.hpp"
#include "strategies/schedule.hpp"

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
  Cluster cluster("bench" + std::to_string(devices));
  GpuSpec gpu;
  gpu.name            = "A100";
  gpu.memory_bytes    = 40 * units::kGiB;
  gpu.peak_flops_fp16 = 312e12;
  gpu.peak_flops_fp32 = 19.5e12;
  gpu.memory_bandwidth_bytes_per_s = 1.5e12;
  const int g      = cluster.add_gpu(gpu);
  const int region = cluster.add_region("dc", 10 * units::kMicrosecond);
  for (int n = 0; n < devices / 8; ++n) {
    const int node = cluster.add_node(region, "n" + std::to_string(n), {300e9, 2 * units::kMicrosecond},
                                      {200 * units::kGbps, 5 * units::kMicrosecond});
    for (int d = 0; d < 8; ++d)
      cluster.add_device(node, g);
  }
  return cluster;
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
  strategies::Schedule s;
  const int devices = cluster.device_count();
  const int nodes   = devices / 8;
  s.device_count    = devices;
  s.queues.resize(devices);
  auto add = [&](TaskKind kind, Stream stream, int device, std::vector<int> deps) -> strategies::Task& {
    strategies::Task t;
    t.id     = static_cast<int>(s.tasks.size());
    t.kind   = kind;
    t.stream = stream;
    t.device = device;
    t.deps   = std::move(deps);
    s.queues[device][static_cast<int>(stream)].push_back(t.id);
    s.tasks.push_back(std::move(t));
    return s.tasks.back();
  };
  auto collective = [&](TaskKind kind, Stream stream, const std::vector<int>& members, double bytes,
                        const std::vector<int>& deps) {
    strategies::Collective c;
    c.kind  = kind;
    c.bytes = bytes;
    c.devices = members;
    for (std::size_t i = 0; i < members.size(); ++i) {
      strategies::Task& t = add(kind, stream, members[i], {deps[members[i]]});
      t.bytes      = bytes;
      t.collective = static_cast<int>(s.collectives.size());
      c.tasks.push_back(t.id);
    }
    s.collectives.push_back(c);
    return s.collectives.back().tasks;
  };
  std::vector<int> last(devices, -1);
  for (int mb = 0; mb < micro_batches; ++mb) {
    for (int d = 0; d < devices; ++d) {
      strategies::Task& t = add(TaskKind::forward, Stream::compute, d, last[d] >= 0 ? std::vector<int>{last[d]} : std::vector<int>{});
      t.flops = 1e-3; // seconds, see the replay options below
      t.micro_batch = mb;
      last[d] = t.id;
    }
    for (int n = 0; n < nodes; ++n) {
      std::vector<int> members;
      for (int l = 0; l < 8; ++l)
        members.push_back(n * 8 + l);
      const auto ids = collective(TaskKind::all_reduce, Stream::tensor_parallel, members, 16e6, last);
      for (std::size_t i = 0; i < members.size(); ++i)
        last[members[i]] = ids[i];
    }
    for (int d = 0; d < devices; ++d) {
      const int peer = (d + 8) % devices;
      strategies::Task& send = add(TaskKind::send, Stream::pipeline, d, {last[d]});
      const int send_id      = send.id;
      strategies::Task& recv = add(TaskKind::recv, Stream::pipeline, peer, {});
      const int recv_id      = recv.id;
      s.tasks[send_id].bytes = s.tasks[recv_id].bytes = 8e6;
      s.tasks[send_id].peer  = peer;
      s.tasks[recv_id].peer  = d;
      s.tasks[send_id].match = recv_id;
      s.tasks[recv_id].match = send_id;
    }
  }
  for (int l = 0; l < 8; ++l) {
    std::vector<int> members;
    for (int n = 0; n < nodes; ++n)
      members.push_back(n * 8 + l);
    collective(TaskKind::all_reduce, Stream::data_parallel, members, 100e6, last);
  }
  return s;
}

void BM_ReplaySynthetic(benchmark::State& state)
{
  const Cluster cluster               = cluster_of(static_cast<int>(state.range(0)));
  const strategies::Schedule schedule = synthetic_schedule(cluster, 8);
  sim::ReplayOptions options;
  options.compute_seconds = [](const strategies::Task& t) { return t.flops; };
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
