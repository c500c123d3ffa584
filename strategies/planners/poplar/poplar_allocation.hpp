#pragma once
/// Poplar's Algorithm 2: the global batch split over devices of different speed and memory, each device
/// independent of the others (every device is its own data-parallel replica).

#include "strategies/profiling/speed_curve.hpp"

#include <vector>

namespace hetsim::strategies {

/// One device's share: grad_accum micro-batches of micro_batch sequences, the last of last_micro_batch.
struct DeviceBatch {
  int micro_batch      = 1;
  int grad_accum       = 1;
  int last_micro_batch = 1;
  long long total() const { return static_cast<long long>(micro_batch) * (grad_accum - 1) + last_micro_batch; }
};

struct BatchAllocation {
  std::vector<DeviceBatch> devices;
  double seconds = 0; ///< the allocation's own estimate of an iteration (computation, plus ZeRO-2/3 traffic)
};

/// ZeRO-0/1 (lines 1-16): every device gets floor(gbs / Σ peak speed × its peak speed) sequences; the
/// remainder goes one sequence at a time to the device that would finish first with it. As Σ t_i·p_i is the
/// allocated batch, that greedily minimises eq. (4), Σ (T − t_i)·p_i = T·Σ p − gbs. A device then runs
/// as few micro-batches as the top of its peak range allows (never above its `mbs`), evened out, and a last
/// one with the rest.
/// `devices[i]` is device i's curve (devices of one type share one). Needs global_batch >= devices.
BatchAllocation allocate_by_peak_speed(const std::vector<const SpeedCurve*>& devices, int global_batch);

/// ZeRO-2/3 (lines 17-29): every device synchronises after every micro-step, so all take the same number of
/// them. For each micro-step time t (every distinct step time of the curves), each device takes the largest
/// batch it computes within t; the micro-steps needed to reach the global batch cost (t + communication) each;
/// the t of the least wall time wins. The last micro-step takes what is left, spread so that it ends first.
BatchAllocation allocate_by_step_time(const std::vector<const SpeedCurve*>& devices, int global_batch,
                                      double communication_seconds);
/// The same sweep's `count` best micro-step times, best first: the runners-up differ in how many micro-steps
/// the batch takes, which the simulator (where gradient traffic may hide behind backward) can rank differently.
std::vector<BatchAllocation> allocations_by_step_time(const std::vector<const SpeedCurve*>& devices, int global_batch,
                                                      double communication_seconds, int count);

} // namespace hetsim::strategies
