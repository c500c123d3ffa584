#pragma once
/// What the batch-splitting planners (poplar, deepspeed, whale) share: every device is its own data-parallel
/// replica with its own micro-batch, the ZeRO stage is asked for (flag `zero=N`) or swept, and each GPU type is
/// profiled once at the lowest stage from the requested one on where all types hold a sequence.

#include "strategies/planners/poplar/poplar_allocation.hpp"
#include "strategies/profiling/profiler.hpp"
#include "strategies/search/planner.hpp"

#include <string>
#include <vector>

namespace hetsim::strategies {

struct ClusterProfile {
  ProfileSetting setting;
  /// "ZeRO-1", or "ZeRO-2 (raised from ZeRO-0: T4 cannot hold one sequence)", or "ZeRO-3 with recompute (...)"
  std::string note;
  std::vector<int> type_of_device;      ///< device id -> index into the two below
  std::vector<int> representative;      ///< per type: the device profiled
  std::vector<DeviceProfile> profiles;  ///< per type
  /// `mbs` of a device.
  int max_batch(int device) const { return profiles[type_of_device[device]].max_batch; }
};

/// Profiles one device of each GPU type (Algorithm 1, batches up to the global batch), starting at
/// `requested_stage` and raising the stage while some type cannot hold one sequence; when none holds one without
/// it, the same again with activation recompute. Throws InfeasiblePlan when one cannot even at ZeRO-3 with
/// recompute.
ClusterProfile profile_cluster(const Problem& problem, Profiler& profiler, int requested_stage);

/// tp = pp = 1, device i is replica i with its batch; last_micro_batch only where some device needs it.
Plan per_device_plan(const Problem& problem, const std::vector<DeviceBatch>& batches, ProfileSetting setting);

/// The stages a planner should try: N for a flag "zero=N", otherwise 0 to 3. InputError for a malformed one.
std::vector<int> requested_zero_stages(const PlannerContext& context, const char* planner);

} // namespace hetsim::strategies
