#pragma once
/// Kernel events of a simulated trace: each compute task's simulated interval divided over the kernels it
/// launches (strategies::task_kernels, the list the executors run) in proportion to the cost model's time for
/// each, so that a measured trace's kernels compare one by one with the model's.

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "costmodel/compute.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

#include <map>
#include <string>
#include <vector>

namespace hetsim::traces {

/// `trace` holds the simulated task events of `schedule`; `scale` is the run's (strategies/lowering/scale.hpp).
/// A layer given only by its totals (a layer list's) is one product named after the layer.
std::vector<KernelEvent> predicted_kernel_events(const Trace& trace, const strategies::Schedule& schedule,
                                                 const Cluster& cluster, const models::Workload& workload,
                                                 const costmodel::ComputeModel& compute, Dtype dtype, double scale);

/// Time spent per kernel name in a trace, summed over every task and device.
struct KernelTotal {
  int count      = 0;
  double seconds = 0;
};
std::map<std::string, KernelTotal> kernel_totals(const std::vector<KernelEvent>& kernels);

} // namespace hetsim::traces
