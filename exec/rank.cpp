#include "exec/rank.hpp"

#include "core/median.hpp"
#include "exec/liveness.hpp"
#include "exec/stream_runner.hpp"
#include "traces/task_event.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

namespace hetsim::exec {
namespace {

/// The kernels of record `i` (task event `task`): each one's median offset from its task's start and median
/// duration over the iterations, inside the task's interval.
void append_kernels(traces::Trace& trace, const std::vector<std::vector<TaskRecord>>& measured, std::size_t i,
                    const traces::TraceEvent& task)
{
  const auto& first = measured.front()[i].kernels;
  for (std::size_t k = 0; k < first.size(); ++k) {
    std::vector<double> offsets, durations;
    for (const auto& records : measured) {
      const TaskRecord& r = records[i];
      HETSIM_ASSERT(r.kernels.size() == first.size());
      offsets.push_back(r.kernels[k].start_s - r.start_s);
      durations.push_back(r.kernels[k].end_s - r.kernels[k].start_s);
    }
    const double start = std::min(task.end_s, task.start_s + median(offsets));
    trace.kernels.push_back(
        traces::KernelEvent{task.task_id, task.device, first[k].name, start, std::min(task.end_s, start + median(durations))});
  }
}

} // namespace

traces::Trace run_rank(Executor& executor, const RankSetup& setup, const Workload& workload, const Cluster& cluster,
                       const RunOptions& options, const std::string& executor_name)
{
  HETSIM_ASSERT(workload.schedule && workload.model && options.iterations >= 1);
  const strategies::Schedule& schedule = *workload.schedule;
  const std::string rank_name = "rank " + std::to_string(setup.rank) + ": ";
  Liveness::OnAbort on_abort;
  if (options.end_process)
    on_abort = [&](const std::string& message) { options.end_process(rank_name + message); };
  Liveness liveness(setup.store_dir, setup.rank, setup.world_size, on_abort);
  int current_task = -1;
  auto fail = [&](const std::string& what) -> RankFailure {
    std::string message = rank_name;
    if (current_task >= 0)
      message += "task " + std::to_string(current_task) + " '" + schedule.task_name(current_task) + "' failed: ";
    message += what;
    if (!liveness.mark_failed(message)) // the launcher's abort came first, and its thread is ending the process
      for (;;)
        std::this_thread::sleep_for(std::chrono::hours(1));
    const std::string blame = liveness.blame(2 * Liveness::kStaleSeconds);
    return RankFailure(blame.empty() ? message : message + " (" + blame + ")");
  };

  std::vector<std::vector<TaskRecord>> measured;
  try {
    executor.connect(setup);
    executor.prepare(workload);
    if (options.on_iteration) // starts the clock of the first iteration's progress line
      options.on_iteration(0, options.warmup + options.iterations);
    for (int i = 0; i < options.warmup + options.iterations; ++i) {
      executor.barrier();
      auto records = run_iteration(executor, schedule, setup.rank, Clock::now());
      if (i >= options.warmup)
        measured.push_back(std::move(records));
      if (options.on_iteration)
        options.on_iteration(i + 1, options.warmup + options.iterations);
    }
    executor.barrier();
  } catch (const TaskFailed& e) {
    current_task = e.task_id();
    throw fail(e.what());
  } catch (const std::exception& e) {
    throw fail(e.what());
  }
  liveness.mark_done();

  traces::Trace trace;
  trace.source = executor_name;
  trace.scale  = workload.scale;
  for (const auto& device : cluster.devices()) {
    const GpuSpec& gpu = cluster.gpu_of(device.id);
    trace.device_labels.push_back("dev" + std::to_string(device.id) + " " + gpu.name + " @ " +
                                  cluster.node_of(device.id).name);
    trace.devices.push_back(traces::TraceDevice{gpu.name, gpu.peak_flops(workload.dtype)});
  }
  // Each task's median start and duration over the timed iterations: one typical iteration, robust to a
  // hiccup in any single one.
  const std::size_t count = measured.front().size();
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> starts, durations;
    for (const auto& records : measured) {
      HETSIM_ASSERT(records.size() == count && records[i].task_id == measured.front()[i].task_id);
      starts.push_back(records[i].start_s);
      durations.push_back(records[i].end_s - records[i].start_s);
    }
    const auto& task  = schedule.tasks[measured.front()[i].task_id];
    traces::TraceEvent e = traces::task_event(schedule, cluster, task, workload.model->seq_len, workload.scale);
    e.start_s            = median(starts);
    e.end_s              = e.start_s + median(durations);
    e.flops              = measured.front()[i].flops;
    append_kernels(trace, measured, i, e);
    trace.events.push_back(std::move(e));
  }
  return trace;
}

} // namespace hetsim::exec
