#include "strategies/task_annotation.hpp"

#include "costmodel/link_class.hpp"
#include "strategies/scale.hpp"

namespace hetsim::strategies {

TaskAnnotation annotate_task(const Schedule& schedule, const Cluster& cluster, const Task& task, int seq_len,
                             double scale)
{
  TaskAnnotation a;
  if (is_compute(task.kind)) {
    a.tokens = static_cast<double>(task.samples) * seq_len;
    return a;
  }
  a.bytes = scaled_bytes(task, scale);
  if (is_p2p(task.kind)) {
    a.link = std::string(costmodel::link_class(cluster, task.device, task.peer));
    return a;
  }
  const auto& collective = schedule.collectives[task.collective];
  a.link       = std::string(costmodel::ring_link_class(cluster, collective.devices));
  a.members    = static_cast<int>(collective.devices.size());
  a.collective = task.collective;
  return a;
}

} // namespace hetsim::strategies
