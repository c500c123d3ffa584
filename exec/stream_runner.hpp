#pragma once
/// Runs one rank's tasks of one iteration on an Executor exactly as the Schedule orders them: one thread per
/// ordered stream (compute, tensor-parallel, data-parallel) taking its queue in order; pipeline sends one thread
/// per peer in issue order, receives likewise; every task first waits for its deps (any stream).

#include "exec/executor.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

namespace hetsim::exec {

using Clock = std::chrono::steady_clock;

/// When one task ran on this rank, in seconds since the iteration's start: from the host's call of the task's
/// operation to its return, or to the call plus the duration the device measured when the executor reports one.
struct TaskRecord {
  int task_id    = 0;
  double start_s = 0;
  double end_s   = 0;
  double flops   = 0; ///< executed (scaled) FLOPs of compute tasks
  std::vector<KernelTiming> kernels; ///< compute tasks with Workload::time_kernels, in seconds since the start
};

/// A task's operation threw: the first failure of the iteration.
class TaskFailed : public std::runtime_error {
public:
  TaskFailed(int task_id, const std::string& what) : std::runtime_error(what), task_id_(task_id) {}
  int task_id() const { return task_id_; }

private:
  int task_id_;
};

/// Runs the tasks of device `rank`; records are in task id order. On the first failure the other threads are
/// abandoned (they may still be blocked in the executor, so the caller must not destroy it) and TaskFailed is
/// thrown.
std::vector<TaskRecord> run_iteration(Executor& executor, const strategies::Schedule& schedule, int rank,
                                      Clock::time_point start);

} // namespace hetsim::exec
