/// Poplar's online profiling through the cpu executor, in this process: real steps, real (counted) allocations.

#include "exec_fixtures.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "exec/executor_profiler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

using namespace hetsim;
using namespace hetsim::test;

namespace {

/// The tiny model on the two-memory cluster (devices 0, 1 small; 2, 3 large), with the executors of this build.
struct Setup {
  Cluster cluster           = load_cluster(data_file("two_types.json"));
  models::Workload workload = models::load_workload(data_file("profile_model.json"));
  strategies::Problem problem;
  exec::ExecutorProfilerOptions options;

  Setup()
  {
    ::setenv("HETSIM_EXECUTOR_PATH", HETSIM_EXECUTOR_DIR, 1);
    problem.cluster     = &cluster;
    problem.workload    = &workload;
    options.scale       = 0.5;
    options.warmup      = 0; // these tests time nothing closely
    options.repetitions = 1;
  }
};

/// What the model's layer list says one sequence keeps for backward at `scale` in fp16: the executor must hold
/// exactly this per sequence.
double saved_bytes_per_sequence(const models::Workload& workload, double scale)
{
  double bytes = 0;
  for (const auto& layer : workload.layers)
    bytes += std::ceil(layer.saved_activation_bytes_per_sample * scale);
  return bytes;
}

} // namespace

TEST_CASE("the executor's forward holds exactly the layers' saved activations, linear in the batch")
{
  Setup s;
  exec::ExecutorProfiler profiler(s.problem, s.options);
  const double per_sequence = saved_bytes_per_sequence(s.workload, s.options.scale);
  for (int batch : {1, 3, 8}) {
    CAPTURE(batch);
    const strategies::MemoryProbe probe = profiler.probe_memory(0, batch, 0);
    CHECK(probe.after_bytes - probe.before_bytes == doctest::Approx(batch * per_sequence).epsilon(1e-12));
    CHECK(probe.total_bytes == s.cluster.gpu_of(0).memory_bytes);
  }
}

TEST_CASE("the executor's model states shrink with the ZeRO stage over the cluster's four devices")
{
  Setup s;
  exec::ExecutorProfiler profiler(s.problem, s.options);
  double previous = 0;
  for (int stage : {0, 1, 2}) {
    CAPTURE(stage);
    const double before = profiler.probe_memory(0, 1, stage).before_bytes;
    if (stage > 0)
      CHECK(before < previous);
    previous = before;
  }
  // ZeRO-2 over 4 devices keeps a quarter of the fp16 gradients: 3/4 of 2 bytes per (scaled) parameter fewer.
  const double params = std::round(1e5 * 0.25) * 2;
  CHECK(profiler.probe_memory(0, 1, 1).before_bytes - profiler.probe_memory(0, 1, 2).before_bytes ==
        doctest::Approx(2 * params * 3 / 4).epsilon(1e-9));
}

TEST_CASE("algorithm 1 on the executor finds the largest batch under the memory cap, in O(log) steps")
{
  Setup s;
  exec::ExecutorProfiler uncapped(s.problem, s.options);
  for (int k : {1, 6, 13}) {
    CAPTURE(k);
    // The bytes a step of k and of k + 1 sequences holds at its peak (after the forward), measured on their own;
    // a cap between them must give exactly k.
    const double fits = uncapped.probe_memory(0, k, 0).after_bytes;
    const double over = uncapped.probe_memory(0, k + 1, 0).after_bytes;
    REQUIRE(fits < over);
    strategies::Problem capped = s.problem;
    capped.memory_limit_bytes  = (fits + over) / 2;
    exec::ExecutorProfiler profiler(capped, s.options);
    const strategies::DeviceProfile p = strategies::profile_device(profiler, 0, 0, 1 << 20);
    CHECK(p.max_batch == k);
    // Memory grows linearly in the first forward, so its estimate bounds the search: at most two steps per
    // doubling of it.
    const strategies::MemoryProbe one = profiler.probe_memory(0, 1, 0);
    const double estimate =
        std::floor((capped.memory_limit_bytes - one.before_bytes) / (one.after_bytes - one.before_bytes));
    CHECK(estimate >= k);
    CHECK(p.steps <= 2 * static_cast<int>(std::ceil(std::log2(estimate + 1))) + 2);
    REQUIRE(!p.points.empty());
    CHECK(p.points.back().batch == k);
    CHECK(profiler.run_step(0, k + 1, 0).out_of_memory);
  }
}

TEST_CASE("a larger batch takes longer; a device's own memory is its default cap")
{
  Setup s;
  s.options.repetitions = 3; // medians, so that a hiccup of this shared machine does not decide
  exec::ExecutorProfiler profiler(s.problem, s.options);
  const strategies::StepResult one  = profiler.run_step(0, 1, 0);
  const strategies::StepResult many = profiler.run_step(0, 16, 0);
  REQUIRE(!one.out_of_memory);
  REQUIRE(!many.out_of_memory);
  CHECK(one.step_seconds > 0);
  CHECK(many.step_seconds > 4 * one.step_seconds);

  // The small type holds 20 MiB, the large one 40: twice the room, more than twice the batch (same states).
  const int small = strategies::profile_device(profiler, 0, 0, 1 << 20).max_batch;
  const int large = strategies::profile_device(profiler, 2, 0, 1 << 20).max_batch;
  CHECK(small >= 4);
  CHECK(large > 2 * small);
}

TEST_CASE("a device that cannot hold the model states profiles to no batch at all")
{
  Setup s;
  s.problem.memory_limit_bytes = 1 << 20; // 1 MiB, less than the optimizer states alone
  exec::ExecutorProfiler profiler(s.problem, s.options);
  CHECK(profiler.run_step(0, 1, 0).out_of_memory);
  const strategies::DeviceProfile p = strategies::profile_device(profiler, 0, 0, 64);
  CHECK(p.max_batch == 0);
  CHECK(p.points.empty());
}

TEST_CASE("an unknown executor is refused up front")
{
  Setup s;
  s.options.executor = "no-such-executor";
  CHECK_THROWS_AS(exec::ExecutorProfiler(s.problem, s.options), BackendUnavailable);
}
