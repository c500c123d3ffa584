#pragma once
/// One trace of a run from its per-rank traces.

#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

#include <vector>

namespace hetsim::exec {

/// Concatenates the ranks' events (labels and devices from the first) and gives every send/recv pair the
/// simulator's meaning: both span the transfer itself, from when both sides were ready (the later start) to the
/// receive's end, so that a side waiting for its peer counts as idle, not as communication. Throws InputError
/// when a task of the schedule is missing or appears twice.
traces::Trace merge_rank_traces(const std::vector<traces::Trace>& ranks, const strategies::Schedule& schedule);

} // namespace hetsim::exec
