#pragma once
/// The chain of tasks that set a replayed iteration's time, and the device whose work holds it up.
///
/// From the task that ends last, each step goes back to whatever held the current task up: for a collective
/// member or a transfer, the member (or the other side) that arrived last, since the call cannot finish before
/// it; otherwise the task that ended last among its dependencies and its predecessor on the same stream. On a
/// cluster with one slow GPU the chain runs through that GPU's compute, whereas the devices waiting for it look
/// just as busy, their waits counted as communication in flight.

#include "sim/replay/replay.hpp"
#include "strategies/lowering/schedule.hpp"

#include <vector>

namespace hetsim::sim {

struct CriticalPath {
  std::vector<int> tasks;        ///< last task first
  std::vector<double> compute_s; ///< per device: seconds of its compute tasks on the path
  double communication_s = 0;    ///< seconds of communication tasks on the path
};

CriticalPath critical_path(const strategies::Schedule& schedule, const std::vector<TaskTiming>& timings,
                           int device_count);

} // namespace hetsim::sim
