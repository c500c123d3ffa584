#pragma once
/// Each device's memory over a simulated iteration, for the trace's counter track (traces::MemorySample).
///
/// The memory model (strategies::plan_memory) gives a peak by term. Over time, the model states, the framework's
/// own memory and the workspace are held all along; the activations rise and fall with the micro-batches in
/// flight on the device: one joins when its first forward task there ends and leaves when its last backward task
/// there ends. The activation term is spread over that count so that its peak is the model's term. The transient
/// buffers (a few hundred MiB that live for one kernel) are left out of the track.

#include "sim/replay/replay.hpp"
#include "sim/report/report.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

#include <vector>

namespace hetsim::sim {

/// For each of the report's devices (with their DeviceReport::memory): one sample at time 0, then one at every
/// change, by device and time.
std::vector<traces::MemorySample> memory_track(const strategies::Schedule& schedule,
                                               const std::vector<TaskTiming>& timings,
                                               const std::vector<DeviceReport>& devices);

} // namespace hetsim::sim
