#pragma once
/// Poplar (Zhang et al., AAAI 2025): ZeRO data parallelism over heterogeneous GPUs with a micro-batch per
/// device. Profiling (strategies/profiling/, Algorithm 1) gives each GPU type its `mbs` and step times; speed curves
/// (profiling/speed_curve.hpp) give each its peak range; Algorithm 2 (poplar_allocation.hpp) splits the global batch.

#include "strategies/planners/poplar/device_batch_plan.hpp"

namespace hetsim::strategies {

struct PoplarResult {
  Plan plan;
  ClusterProfile profile;
  BatchAllocation allocation;
};

/// The whole pipeline at `zero_stage` (raised while some GPU type cannot hold one sequence), with any
/// Profiler: the cost model's or, from an executor, one that measures.
PoplarResult plan_poplar(const Problem& problem, Profiler& profiler, int zero_stage);

/// Per micro-step ZeRO-2/3 traffic over all devices as one ring: the gradients reduce-scattered, with
/// ZeRO-3 the parameters gathered before forward and before backward.
double zero_micro_step_seconds(const Problem& problem, int zero_stage);

} // namespace hetsim::strategies
