#include "exec/stream_runner.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace hetsim::exec {
namespace {

using strategies::Stream;
using strategies::Task;
using strategies::TaskKind;

/// Shared by the stream threads; owned jointly so that abandoned threads never touch freed memory.
struct State {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<char> done; ///< by task id
  std::map<int, TaskRecord> records;
  std::size_t finished = 0;
  std::optional<TaskFailed> failure;
};

double seconds_since(Clock::time_point start)
{
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `queue` in order; returns when done or when another thread failed.
void run_queue(const std::shared_ptr<State>& state, Executor& executor, const strategies::Schedule& schedule,
               std::vector<int> queue, Clock::time_point start)
{
  for (int id : queue) {
    const Task& task = schedule.tasks[id];
    {
      std::unique_lock lock(state->mutex);
      state->changed.wait(lock, [&] {
        if (state->failure)
          return true;
        for (int dep : task.deps)
          if (!state->done[dep])
            return false;
        return true;
      });
      if (state->failure)
        return;
    }
    TaskRecord record;
    record.task_id = id;
    record.start_s = seconds_since(start);
    TaskResult result;
    try {
      if (strategies::is_compute(task.kind))
        result = executor.compute(task);
      else if (strategies::is_collective(task.kind))
        result = executor.collective(task);
      else if (task.kind == TaskKind::send)
        result = executor.send(task);
      else
        result = executor.recv(task);
    } catch (const std::exception& e) {
      std::lock_guard lock(state->mutex);
      if (!state->failure)
        state->failure.emplace(id, e.what());
      state->changed.notify_all();
      return;
    }
    record.flops = result.flops;
    record.end_s = seconds_since(start);
    for (KernelTiming& k : result.kernels) {
      k.start_s += record.start_s;
      k.end_s += record.start_s;
    }
    record.kernels = std::move(result.kernels);
    // A device-measured duration replaces the host's, anchored at the call: the device's interval lies inside
    // the call, so the task never appears to end after the host saw it end (nor after a dependent started).
    if (result.device_seconds)
      record.end_s = record.start_s + std::clamp(*result.device_seconds, 0.0, record.end_s - record.start_s);
    std::lock_guard lock(state->mutex);
    state->done[id] = 1;
    state->records[id] = record;
    ++state->finished;
    state->changed.notify_all();
  }
}

} // namespace

std::vector<TaskRecord> run_iteration(Executor& executor, const strategies::Schedule& schedule, int rank,
                                      Clock::time_point start)
{
  HETSIM_ASSERT(rank >= 0 && rank < static_cast<int>(schedule.queues.size()));
  HETSIM_ASSERT(schedule.fold == nullptr); // a folded schedule leaves devices without their tasks: simulator only
  const auto& streams = schedule.queues[rank];

  std::vector<std::vector<int>> queues;
  std::size_t total = 0;
  for (Stream stream : {Stream::compute, Stream::tensor_parallel, Stream::data_parallel, Stream::expert_parallel,
                        Stream::context_parallel}) {
    queues.push_back(streams[static_cast<int>(stream)]);
    total += queues.back().size();
  }
  // Pipeline: one queue per (direction, peer) in issue order, so sends to one peer go out one at a time.
  std::map<std::pair<int, int>, std::vector<int>> channels;
  for (int id : streams[static_cast<int>(Stream::pipeline)]) {
    const Task& task = schedule.tasks[id];
    channels[{task.kind == TaskKind::send ? 0 : 1, task.peer}].push_back(id);
    ++total;
  }
  for (auto& [key, queue] : channels)
    queues.push_back(std::move(queue));

  auto state = std::make_shared<State>();
  state->done.assign(schedule.tasks.size(), 0);
  std::vector<std::thread> threads;
  for (auto& queue : queues)
    if (!queue.empty())
      threads.emplace_back(run_queue, state, std::ref(executor), std::cref(schedule), std::move(queue), start);

  std::unique_lock lock(state->mutex);
  state->changed.wait(lock, [&] { return state->failure || state->finished == total; });
  if (state->failure) {
    const TaskFailed failure = *state->failure;
    lock.unlock();
    // Threads blocked inside the executor cannot be interrupted; the process is about to end.
    for (auto& thread : threads)
      thread.detach();
    throw failure;
  }
  lock.unlock();
  for (auto& thread : threads)
    thread.join();
  std::vector<TaskRecord> records;
  records.reserve(state->records.size());
  for (const auto& [id, record] : state->records)
    records.push_back(record);
  return records;
}

} // namespace hetsim::exec
