#pragma once
/// The trace event of one Schedule task, without its timing: its identity (id, name, kind, stream, device) and
/// what `hetsim calibrate` needs to fit the cost model from it (tokens, bytes, link class, collective). The
/// executors and the simulator both build their events here, so a measured and a simulated trace of one
/// Schedule carry the same fields, task by task.

#include "core/cluster.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

namespace hetsim::traces {

/// `scale` is the run's (strategies/lowering/scale.hpp): bytes are those moved at it. The caller sets start_s,
/// end_s and flops.
TraceEvent task_event(const strategies::Schedule& schedule, const Cluster& cluster, const strategies::Task& task,
                      int seq_len, double scale);

} // namespace hetsim::traces
