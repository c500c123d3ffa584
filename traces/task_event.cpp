#include "traces/task_event.hpp"

#include "costmodel/link_class.hpp"
#include "strategies/lowering/scale.hpp"

namespace hetsim::traces {

TraceEvent task_event(const strategies::Schedule& schedule, const Cluster& cluster, const strategies::Task& task,
                      int seq_len, double scale)
{
  TraceEvent e;
  e.task_id = task.id;
  e.name    = schedule.task_name(task.id);
  e.kind    = std::string(strategies::task_kind_name(task.kind));
  e.stream  = std::string(strategies::stream_name(task.stream));
  e.device  = task.device;
  if (strategies::is_compute(task.kind)) {
    e.tokens = static_cast<double>(task.samples) * seq_len;
    return e;
  }
  e.bytes = strategies::scaled_bytes(task, scale);
  if (strategies::is_p2p(task.kind)) {
    e.link  = std::string(costmodel::link_class(cluster, task.device, task.peer));
    e.match = task.match;
    return e;
  }
  const auto& collective = schedule.collectives[task.collective];
  e.link       = std::string(costmodel::ring_link_class(cluster, collective.devices));
  e.members    = collective.member_count();
  e.collective = task.collective;
  return e;
}

} // namespace hetsim::traces
