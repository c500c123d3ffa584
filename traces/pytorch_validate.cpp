#include "traces/pytorch_validate.hpp"

#include "core/median.hpp"
#include "costmodel/kernel_time.hpp"
#include "strategies/lowering/task_kernels.hpp"

namespace hetsim::traces {
namespace {

/// The kind a profiler would file a modelled kernel under, by its operator (its name before ".dgrad", ".wgrad"
/// or ".cast").
ProfiledKind modelled_kind(const models::Kernel& kernel)
{
  if (kernel.name.ends_with(".cast"))
    return ProfiledKind::memory; // autocast's copies are elementwise kernels
  switch (kernel.kind) {
  case models::Kernel::Kind::matmul: return ProfiledKind::matmul;
  case models::Kernel::Kind::fused_attention: return ProfiledKind::attention;
  case models::Kernel::Kind::stream: break;
  }
  return kernel.name == "cross_entropy" ? ProfiledKind::loss : ProfiledKind::memory;
}

} // namespace

std::pair<double, double> memory_bound_seconds(const PytorchComparison& comparison)
{
  double measured = 0, predicted = 0;
  for (ProfiledKind kind : {ProfiledKind::memory, ProfiledKind::loss})
    if (auto it = comparison.by_kind.find(profiled_kind_name(kind)); it != comparison.by_kind.end()) {
      measured += it->second.measured_s;
      predicted += it->second.predicted_s;
    }
  return {measured, predicted};
}

PytorchComparison compare_pytorch_trace(const PytorchTrace& measured, const Trace& simulated,
                                        const strategies::Schedule& schedule, const Cluster& cluster,
                                        const models::Workload& workload, const costmodel::ComputeModel& compute,
                                        Dtype dtype, int device)
{
  PytorchComparison c;
  std::vector<double> spans, busy, launches;
  for (const ProfiledStep& step : measured.steps) {
    spans.push_back(step.seconds);
    busy.push_back(step.busy_s);
    launches.push_back(step.launches);
  }
  c.measured_step_s   = median(spans);
  c.measured_busy_s   = median(busy);
  c.measured_launches = median(launches);
  const double steps  = static_cast<double>(measured.steps.size());
  for (const ProfiledKernel& kernel : measured.kernels)
    c.by_kind[profiled_kind_name(kernel.kind)].measured_s += kernel.seconds / steps;

  const GpuSpec& gpu                         = cluster.gpu_of(device);
  const costmodel::KernelConstants constants = compute.constants(gpu, workload);
  double end = 0;
  for (const TraceEvent& e : simulated.events) {
    end = std::max(end, e.end_s);
    if (e.device != device)
      continue;
    const strategies::Task& task = schedule.tasks.at(e.task_id);
    if (task.kind == strategies::TaskKind::optimizer) {
      c.by_kind[profiled_kind_name(ProfiledKind::optimizer)].predicted_s += e.end_s - e.start_s;
      continue;
    }
    if (task.kind != strategies::TaskKind::forward && task.kind != strategies::TaskKind::backward)
      continue;
    for (const models::Kernel& kernel : strategies::task_kernels(task, workload, schedule.tp, 1, schedule.ep,
                                                                 schedule.sequence_parallel, schedule.cp)) {
      c.by_kind[profiled_kind_name(modelled_kind(kernel))].predicted_s +=
          costmodel::kernel_seconds(gpu, constants, kernel, dtype);
      c.predicted_launches += kernel.launches;
    }
  }
  c.predicted_step_s = end;
  return c;
}

} // namespace hetsim::traces
