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

models::Operator scaled_operator(models::Operator op, double scale)
{
  using models::OperatorKind;
  if (op.kind == OperatorKind::linear) {
    op.n *= scale;
    op.k *= scale;
  } else if (op.kind == OperatorKind::batched_matmul || op.kind == OperatorKind::fused_attention) {
    op.count *= scale * scale;
    op.fixed_flops_per_sample *= scale * scale;
  }
  op.params *= scale * scale;
  op.backward_fixed_bytes *= scale * scale; // a table of parameters' gradients
  op.bytes_per_sample *= scale;
  op.saved_bytes_per_sample *= scale;
  op.transient_bytes_per_sample *= scale;
  return op;
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
