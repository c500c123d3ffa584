#pragma once
/// Hand-built clusters and schedules for the simulator tests (no lowering, no model presets).
///
/// Convention: in these schedules a compute task's `flops` field holds its duration in seconds
/// (see seconds_from_flops()), so timings are easy to predict.

#include "core/cluster.hpp"
#include "core/units.hpp"
#include "sim/replay/replay.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace hetsim::sim::testing {

inline GpuSpec test_gpu(const std::string& name = "G100", double peak_tflops = 100)
{
  GpuSpec gpu;
  gpu.name                         = name;
  gpu.memory_bytes                 = 40 * units::kGiB;
  gpu.memory_bandwidth_bytes_per_s = 1e12;
  gpu.peak_flops_fp16              = peak_tflops * 1e12;
  gpu.peak_flops_fp32              = peak_tflops * 1e12 / 8;
  return gpu;
}

/// One region of `nodes` nodes with `per_node` devices each.
inline Cluster uniform_cluster(int nodes, int per_node, Link intra, Link nic, double region_latency_s)
{
  Cluster cluster("uniform");
  const int gpu    = cluster.add_gpu(test_gpu());
  const int region = cluster.add_region("r", region_latency_s);
  for (int n = 0; n < nodes; ++n) {
    const int node = cluster.add_node(region, "n" + std::to_string(n), intra, nic);
    for (int d = 0; d < per_node; ++d)
      cluster.add_device(node, gpu);
  }
  return cluster;
}

/// Builds a Schedule task by task.
class ScheduleBuilder {
public:
  explicit ScheduleBuilder(int device_count)
  {
    schedule_.device_count = device_count;
    schedule_.queues.resize(device_count);
  }

  /// A forward task lasting `seconds` (stored in flops).
  int compute(int device, double seconds, std::vector<int> deps = {})
  {
    strategies::Task& t = add(strategies::TaskKind::forward, strategies::Stream::compute, device, std::move(deps));
    t.flops = seconds;
    return t.id;
  }

  /// A send on `src` and its recv on `dst`; returns {send id, recv id}.
  std::pair<int, int> send_recv(int src, int dst, double bytes, std::vector<int> send_deps = {},
                                std::vector<int> recv_deps = {})
  {
    const int s = add(strategies::TaskKind::send, strategies::Stream::pipeline, src, std::move(send_deps)).id;
    const int r = add(strategies::TaskKind::recv, strategies::Stream::pipeline, dst, std::move(recv_deps)).id;
    auto& send = schedule_.tasks[s];
    auto& recv = schedule_.tasks[r];
    send.bytes = recv.bytes = bytes;
    send.peer = dst, recv.peer = src;
    send.match = r, recv.match = s;
    return {s, r};
  }

  /// A collective over `devices` (ring order); `deps[i]` are member i's deps. Returns the member task ids.
  std::vector<int> collective(strategies::TaskKind kind, const std::vector<int>& devices, double bytes,
                              strategies::CollectiveAlgorithm algorithm = strategies::CollectiveAlgorithm::ring,
                              strategies::Stream stream = strategies::Stream::data_parallel,
                              const std::vector<std::vector<int>>& deps = {})
  {
    strategies::Collective c;
    c.kind      = kind;
    c.devices   = devices;
    c.bytes     = bytes;
    c.algorithm = static_cast<int>(algorithm);
    const int index = static_cast<int>(schedule_.collectives.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
      strategies::Task& t = add(kind, stream, devices[i], i < deps.size() ? deps[i] : std::vector<int>{});
      t.bytes      = bytes;
      t.collective = index;
      c.tasks.push_back(t.id);
    }
    schedule_.collectives.push_back(std::move(c));
    return schedule_.collectives.back().tasks;
  }

  strategies::Task& task(int id) { return schedule_.tasks[id]; }
  const strategies::Schedule& schedule() const { return schedule_; }

private:
  strategies::Task& add(strategies::TaskKind kind, strategies::Stream stream, int device, std::vector<int> deps)
  {
    strategies::Task t;
    t.id     = static_cast<int>(schedule_.tasks.size());
    t.kind   = kind;
    t.stream = stream;
    t.device = device;
    t.deps   = std::move(deps);
    t.piece  = t.id;
    schedule_.queues[device][static_cast<int>(stream)].push_back(t.id);
    schedule_.tasks.push_back(std::move(t));
    return schedule_.tasks.back();
  }

  strategies::Schedule schedule_;
};

/// Replay options where a compute task lasts `flops` seconds.
inline ReplayOptions seconds_from_flops()
{
  ReplayOptions options;
  options.compute_seconds = [](const strategies::Task& t) { return t.flops; };
  return options;
}

} // namespace hetsim::sim::testing
