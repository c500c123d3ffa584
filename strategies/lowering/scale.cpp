#include "strategies/lowering/scale.hpp"

#include "core/error.hpp"

namespace hetsim::strategies {
namespace {

/// Parameters and gradients are hidden x hidden; activations are tokens x hidden.
double bytes_factor(Stream stream, double scale)
{
  return stream == Stream::data_parallel ? scale * scale : scale;
}

} // namespace

double scaled_flops(const Task& task, double scale)
{
  return task.flops * scale * scale;
}

double scaled_params(const Task& task, double scale)
{
  return task.params * scale * scale;
}

double scaled_bytes(const Task& task, double scale)
{
  return task.bytes * bytes_factor(task.stream, scale);
}

Schedule scale_schedule(Schedule schedule, double scale)
{
  HETSIM_ASSERT(scale > 0);
  for (Collective& collective : schedule.collectives) {
    HETSIM_ASSERT(!collective.tasks.empty());
    collective.bytes *= bytes_factor(schedule.tasks[collective.tasks.front()].stream, scale);
  }
  for (Task& task : schedule.tasks) {
    task.flops  = scaled_flops(task, scale);
    task.params = scaled_params(task, scale);
    task.bytes  = scaled_bytes(task, scale);
  }
  return schedule;
}

} // namespace hetsim::strategies
