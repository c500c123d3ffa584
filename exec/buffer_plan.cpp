#include "exec/buffer_plan.hpp"

#include "exec/kernel_products.hpp"
#include "strategies/lowering/task_kernels.hpp"

#include <algorithm>

namespace hetsim::exec {

namespace {

/// Stands for a held block in SavedActivations: counts what is alive.
class Counted {
public:
  Counted(std::size_t bytes, std::size_t& alive) : bytes_(bytes), alive_(&alive) { *alive_ += bytes_; }
  Counted(Counted&& other) noexcept : bytes_(other.bytes_), alive_(other.alive_) { other.bytes_ = 0; }
  Counted& operator=(Counted&&) = delete;
  ~Counted() { *alive_ -= bytes_; }

private:
  std::size_t bytes_;
  std::size_t* alive_;
};

} // namespace

BufferPlan buffer_plan(const Workload& workload, int rank)
{
  const strategies::Schedule& s = *workload.schedule;
  BufferPlan plan;
  std::size_t alive = 0;
  SavedActivations<Counted> saved;
  for (int id : s.queues[rank][static_cast<int>(strategies::Stream::compute)]) {
    const strategies::Task& task = s.tasks[id];
    if (task.kind == strategies::TaskKind::optimizer) {
      plan.optimizer_elements = std::max(plan.optimizer_elements,
                                         static_cast<std::size_t>(optimizer_elements(task, workload.scale)));
      continue;
    }
    for (const models::Kernel& kernel :
         strategies::task_kernels(task, *workload.model, s.tp, workload.scale, s.ep, s.sequence_parallel, s.cp))
      plan.workspace_elements = std::max(plan.workspace_elements, kernel_operands(kernel).total());
    if (!workload.hold_training_memory)
      continue;
    saved.begin(task, *workload.model, s, workload.dtype, workload.scale,
                [&](std::size_t bytes) { return Counted(bytes, alive); });
    plan.peak_activation_bytes = std::max(plan.peak_activation_bytes, alive);
    saved.end(task);
  }
  if (workload.hold_training_memory)
    plan.states = model_state_bytes(s, *workload.model, rank, workload.dtype, workload.scale);
  return plan;
}

} // namespace hetsim::exec
