#pragma once
/// Poplar's online profiling on real hardware: a Profiler (strategies/profiling/profiler.hpp) whose steps run on an
/// executor. A step is one device's share of data-parallel training over the whole cluster (so that ZeRO shards
/// as it will) at one micro-batch, reduced to its compute tasks (forward, backward, optimizer) and run as the
/// only rank: Poplar subtracts the collectives' time from what it measures, so none run. The executor holds
/// what training keeps on the device and counts every allocation; one past the device's capacity (the problem's
/// memory limit, else the cluster's memory of that GPU), or one the GPU refuses, is out of memory.

#include "strategies/plan/problem.hpp"
#include "strategies/profiling/profiler.hpp"

#include <memory>
#include <string>

namespace hetsim::exec {

struct ExecutorProfilerOptions {
  std::string executor = "cpu";
  double scale         = 1; ///< Workload::scale: hidden sizes are multiplied by it
  int warmup           = 1; ///< untimed steps first
  int repetitions      = 3; ///< timed steps; their median is the step's time
};

class ExecutorProfiler final : public strategies::Profiler {
public:
  /// `problem` must outlive the profiler. Throws BackendUnavailable when the executor does not exist.
  ExecutorProfiler(const strategies::Problem& problem, ExecutorProfilerOptions options);
  ~ExecutorProfiler() override;

  /// The executor's allocations when prepared, and after the step's forward (without a cap, so that it measures
  /// whatever the batch needs); an out-of-memory forward reports infinite bytes after it.
  strategies::MemoryProbe probe_memory(int device, int batch, strategies::ProfileSetting setting) override;
  /// The median seconds of the step's compute, or out of memory.
  strategies::StepResult run_step(int device, int batch, strategies::ProfileSetting setting) override;

private:
  struct Step;
  /// A fresh executor connected as the only rank and prepared for `device`'s step; throws OutOfMemory.
  std::unique_ptr<Step> prepare_step(int device, int batch, strategies::ProfileSetting setting, double cap_bytes) const;
  /// `body()`, with any failure but OutOfMemory turned into a RankFailure naming the device and the step.
  template <class Body> auto measure(int device, int batch, strategies::ProfileSetting setting, Body&& body) const;

  const strategies::Problem& problem_;
  ExecutorProfilerOptions options_;
};

} // namespace hetsim::exec
