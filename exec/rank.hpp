#pragma once
/// One rank of a real run: connect, prepare, warm up, then time several iterations of this rank's tasks.

#include "core/cluster.hpp"
#include "core/error.hpp"
#include "exec/executor.hpp"
#include "traces/trace.hpp"

#include <functional>

namespace hetsim::exec {

/// A rank could not finish: names the rank, the task and (when it can tell) the peer to blame.
class RankFailure : public Error {
public:
  using Error::Error;
};

struct RunOptions {
  int warmup     = 1; ///< untimed iterations first (connections warm, buffers touched)
  int iterations = 3; ///< timed iterations; the trace keeps each task's median start and duration
  /// Ends the process with `message` (the rank's error) when the local launcher ends the run, called from
  /// another thread while the rank may be blocked inside the executor; never returns. Unset: not watched.
  std::function<void(const std::string& message)> end_process;
  /// Called after each iteration (warm-up ones included) with the count done and the total; unset: silent.
  std::function<void(int done, int total)> on_iteration;
};

/// Runs rank `setup.rank` with `executor` and returns its trace: one event per task of the device (times in
/// seconds since the iteration's start, every rank starting each iteration together after a barrier),
/// annotated for calibration (tokens, link class, group size, executed FLOPs and bytes) and with every device's
/// GPU and peak FLOP/s. Throws RankFailure. After a failure the executor may still be in use by abandoned
/// threads: the caller must end the process without destroying it.
traces::Trace run_rank(Executor& executor, const RankSetup& setup, const Workload& workload, const Cluster& cluster,
                       const RunOptions& options, const std::string& executor_name);

} // namespace hetsim::exec
