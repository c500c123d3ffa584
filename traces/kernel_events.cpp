#include "traces/kernel_events.hpp"

#include "costmodel/kernel_time.hpp"
#include "strategies/lowering/task_kernels.hpp"

namespace hetsim::traces {

std::vector<KernelEvent> predicted_kernel_events(const Trace& trace, const strategies::Schedule& schedule,
                                                 const Cluster& cluster, const models::Workload& workload,
                                                 const costmodel::ComputeModel& compute, Dtype dtype, double scale)
{
  std::vector<KernelEvent> out;
  for (const TraceEvent& e : trace.events) {
    const strategies::Task& task = schedule.tasks.at(e.task_id);
    if (task.kind != strategies::TaskKind::forward && task.kind != strategies::TaskKind::backward)
      continue;
    const GpuSpec& gpu                         = cluster.gpu_of(task.device);
    const costmodel::KernelConstants constants = compute.constants(gpu, workload);
    const std::vector<models::Kernel> kernels  = strategies::task_kernels(task, workload, schedule.tp, scale, schedule.ep,
                                                                                 schedule.sequence_parallel, schedule.cp);
    std::vector<double> weights;
    double total = 0;
    for (const models::Kernel& kernel : kernels) {
      weights.push_back(costmodel::kernel_seconds(gpu, constants, kernel, dtype) + kernel.launches * constants.launch_gap_s);
      total += weights.back();
    }
    if (total <= 0)
      continue;
    // The task's time may come from a profile or the host's dispatch rate: the kernels share it as modelled.
    const double stretch = (e.end_s - e.start_s) / total;
    double at            = e.start_s;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const double end = i + 1 == kernels.size() ? e.end_s : at + weights[i] * stretch;
      out.push_back(KernelEvent{task.id, e.device, kernels[i].name, at, end}); // a folded copy: its own device
      at = end;
    }
  }
  return out;
}

std::map<std::string, KernelTotal> kernel_totals(const std::vector<KernelEvent>& kernels)
{
  std::map<std::string, KernelTotal> out;
  for (const KernelEvent& k : kernels) {
    ++out[k.name].count;
    out[k.name].seconds += k.end_s - k.start_s;
  }
  return out;
}

} // namespace hetsim::traces
