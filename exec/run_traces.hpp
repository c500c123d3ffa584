#pragma once
/// The trace files a run writes in its trace directory: one per rank, then the merged trace and the report.

#include <string>

namespace hetsim::exec {

/// rank<i>.json in `dir`: what rank `rank` writes when its iterations are done.
std::string rank_trace_file(const std::string& dir, int rank);
/// rank<i>.failed.json in `dir`: a rank's trace from a run that failed.
std::string failed_rank_trace_file(const std::string& dir, int rank);

/// Renames the traces that the finished ranks of a failed run left in `dir` to rank<i>.failed.json, so that
/// nothing takes them for a run's (validate, calibrate, a later merge); returns how many.
int set_aside_rank_traces(const std::string& dir, int ranks);

} // namespace hetsim::exec
