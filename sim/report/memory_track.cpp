#include "sim/report/memory_track.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace hetsim::sim {

std::vector<traces::MemorySample> memory_track(const strategies::Schedule& schedule,
                                               const std::vector<TaskTiming>& timings,
                                               const std::vector<DeviceReport>& devices)
{
  using strategies::TaskKind;
  // Per device and (replica, micro-batch, chunk): the end of its first forward and of its last backward there.
  std::vector<std::map<std::tuple<int, int, int>, std::pair<double, double>>> spans(schedule.device_count);
  for (const auto& task : schedule.tasks) {
    if ((task.kind != TaskKind::forward && task.kind != TaskKind::backward) || task.micro_batch < 0)
      continue;
    const double end     = timings[task.id].end_s;
    auto [it, fresh]     = spans[task.device].try_emplace({task.replica, task.micro_batch, task.chunk}, 1e300, -1e300);
    auto& [joined, left] = it->second;
    if (task.kind == TaskKind::forward && !task.recomputed)
      joined = std::min(joined, end);
    else if (task.kind == TaskKind::backward)
      left = std::max(left, end);
  }

  std::vector<traces::MemorySample> samples;
  for (const DeviceReport& device : devices) {
    const auto& m = device.memory;
    const double base =
        m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes + m.framework_bytes + m.workspace_bytes;
    // (time, +1 joins / -1 leaves); at one instant leaves come first, as the allocator reuses freed blocks.
    std::vector<std::pair<double, int>> changes;
    for (const auto& [key, span] : spans[schedule.representative(device.device)])
      if (span.first <= span.second) {
        changes.emplace_back(span.first, +1);
        changes.emplace_back(span.second, -1);
      }
    std::sort(changes.begin(), changes.end());
    int in_flight = 0, most = 0;
    for (const auto& [time, step] : changes)
      most = std::max(most, in_flight += step);
    const double per_micro_batch = most > 0 ? m.activation_bytes / most : 0;
    const int device_id          = device.device;
    samples.push_back({device_id, 0.0, base});
    in_flight = 0;
    for (std::size_t i = 0; i < changes.size(); ++i) {
      in_flight += changes[i].second;
      if (i + 1 < changes.size() && changes[i + 1].first == changes[i].first)
        continue; // one sample per instant
      const double bytes = base + in_flight * per_micro_batch;
      if (samples.back().device == device_id && samples.back().time_s == changes[i].first)
        samples.back().bytes = bytes;
      else
        samples.push_back({device_id, changes[i].first, bytes});
    }
  }
  return samples;
}

} // namespace hetsim::sim
