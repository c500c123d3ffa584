#include "sim/report/critical_path.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::sim {

CriticalPath critical_path(const strategies::Schedule& schedule, const std::vector<TaskTiming>& timings,
                           int device_count)
{
  HETSIM_ASSERT(timings.size() == schedule.tasks.size());
  CriticalPath path;
  path.compute_s.assign(device_count, 0);
  if (timings.empty())
    return path;

  // Each task's predecessor on its own stream (streams run their queue in order).
  std::vector<int> previous(schedule.tasks.size(), -1);
  for (const auto& streams : schedule.queues)
    for (const auto& queue : streams)
      for (std::size_t i = 1; i < queue.size(); ++i)
        previous[queue[i]] = queue[i - 1];

  const auto ends_later = [&](int a, int b) {
    return timings[a].end_s > timings[b].end_s || (timings[a].end_s == timings[b].end_s && a < b);
  };
  int current = 0;
  for (int t = 1; t < static_cast<int>(timings.size()); ++t)
    if (ends_later(t, current))
      current = t;

  // What a task waited for on its own device: its dependencies, and the task before it on an ordered stream
  // (the pipeline stream is only in issue order: a transfer waits for its dependencies and its peer).
  const auto own_predecessors = [&](int id, auto&& visit) {
    const strategies::Task& task = schedule.tasks[id];
    for (int dep : task.deps)
      visit(dep);
    if (!strategies::is_p2p(task.kind))
      visit(previous[id]);
  };
  const auto ready_s = [&](int id) {
    double ready = 0;
    own_predecessors(id, [&](int other) {
      if (other >= 0)
        ready = std::max(ready, timings[other].end_s);
    });
    return ready;
  };

  std::vector<char> visited(schedule.tasks.size(), 0);
  while (current >= 0 && !visited[current]) {
    visited[current]             = 1;
    const strategies::Task& task = schedule.tasks[current];
    // A call ends only after its last member arrives, a transfer only once both sides are ready (both of its
    // tasks span the transfer itself): the side that was ready last held the other up.
    int latest = current;
    if (task.collective >= 0) {
      for (int member : schedule.collectives[task.collective].tasks)
        if (!visited[member] && timings[member].start_s > timings[latest].start_s)
          latest = member;
    } else if (strategies::is_p2p(task.kind) && task.match >= 0 && !visited[task.match] &&
               ready_s(task.match) > ready_s(current)) {
      latest = task.match;
    }
    if (latest != current) {
      current = latest;
      continue;
    }
    path.tasks.push_back(current);
    const double seconds = timings[current].end_s - timings[current].start_s;
    if (strategies::is_compute(task.kind))
      path.compute_s[task.device] += seconds;
    else
      path.communication_s += seconds;

    int held_by = -1;
    own_predecessors(current, [&](int other) {
      if (other >= 0 && !visited[other] && (held_by < 0 || ends_later(other, held_by)))
        held_by = other;
    });
    current = held_by;
  }
  return path;
}

} // namespace hetsim::sim
