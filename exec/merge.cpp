#include "exec/merge.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::exec {

traces::Trace merge_rank_traces(const std::vector<traces::Trace>& ranks, const strategies::Schedule& schedule)
{
  traces::Trace merged;
  if (!ranks.empty()) {
    merged.source        = ranks.front().source;
    merged.device_labels = ranks.front().device_labels;
    merged.devices       = ranks.front().devices;
    merged.scale         = ranks.front().scale;
  }
  std::vector<int> slot(schedule.tasks.size(), -1);
  for (const auto& rank : ranks)
    for (const auto& e : rank.events) {
      if (e.task_id < 0 || e.task_id >= static_cast<int>(slot.size()) || slot[e.task_id] >= 0)
        throw InputError("rank traces: task " + std::to_string(e.task_id) + " is not a task of the schedule or "
                         "appears twice");
      slot[e.task_id] = static_cast<int>(merged.events.size());
      merged.events.push_back(e);
    }
  for (const auto& rank : ranks)
    merged.kernels.insert(merged.kernels.end(), rank.kernels.begin(), rank.kernels.end());
  for (std::size_t id = 0; id < slot.size(); ++id)
    if (slot[id] < 0)
      throw InputError("rank traces: no event for task " + std::to_string(id) + " '" +
                       schedule.task_name(static_cast<int>(id)) + "'");
  for (const auto& task : schedule.tasks) {
    if (task.kind != strategies::TaskKind::send)
      continue;
    auto& send        = merged.events[slot[task.id]];
    auto& recv        = merged.events[slot[task.match]];
    const double from = std::max(send.start_s, recv.start_s);
    const double to   = std::max(from, recv.end_s);
    send.start_s = recv.start_s = from;
    send.end_s = recv.end_s = to;
  }
  return merged;
}

} // namespace hetsim::exec
