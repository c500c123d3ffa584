#pragma once
/// A measured PyTorch training step (a profiler trace, traces/pytorch_trace.hpp) against HetSim's simulation of
/// the same model and plan: the step's time, the GPU's busy time and kernel launches, and the device time of
/// each kind of kernel (products, attention, loss, optimizer, the memory-bound rest).

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "costmodel/compute.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/pytorch_trace.hpp"
#include "traces/trace.hpp"

#include <map>
#include <string>
#include <utility>

namespace hetsim::traces {

struct KindComparison {
  double measured_s  = 0; ///< per step, the kernels' summed durations
  double predicted_s = 0; ///< per iteration, the cost model's device time of the same kind
};

struct PytorchComparison {
  double measured_step_s    = 0; ///< median host span of the profiled steps (the profiler's overhead included)
  double measured_busy_s    = 0; ///< median GPU busy time of a step
  double measured_launches  = 0; ///< kernels per step
  double predicted_step_s   = 0; ///< the simulated iteration
  double predicted_launches = 0; ///< kernel launches of the device's tasks
  std::map<std::string, KindComparison> by_kind; ///< by ProfiledKind name
};

/// Memory-bound time per step, measured and predicted: the elementwise kernels and the loss's (the fp32 logits'
/// casts the trace files as elementwise, the model with the loss).
std::pair<double, double> memory_bound_seconds(const PytorchComparison& comparison);

/// Compares `measured` with the simulation `simulated` of `schedule` on one device (`device`, the one the trace
/// was recorded on): kernels of its forward and backward tasks priced by `compute`, its optimizer step as
/// simulated.
PytorchComparison compare_pytorch_trace(const PytorchTrace& measured, const Trace& simulated,
                                        const strategies::Schedule& schedule, const Cluster& cluster,
                                        const models::Workload& workload, const costmodel::ComputeModel& compute,
                                        Dtype dtype, int device = 0);

} // namespace hetsim::traces
