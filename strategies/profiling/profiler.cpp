#include "strategies/profiling/profiler.hpp"

#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetsim::strategies {

std::string ProfileSetting::text() const
{
  return "ZeRO-" + std::to_string(zero_stage) +
         (recompute == Recompute::full        ? " with recompute"
          : recompute == Recompute::selective ? " with selective recompute"
                                              : "");
}

Plan profiling_plan(const Problem& problem, int batch, ProfileSetting setting)
{
  const int devices = problem.cluster->device_count();
  Plan plan;
  plan.dp = devices;
  plan.placement.resize(devices);
  std::iota(plan.placement.begin(), plan.placement.end(), 0);
  plan.stage_starts = {0};
  plan.micro_batch.assign(devices, batch);
  plan.grad_accum.assign(devices, 1);
  plan.zero_stage = setting.zero_stage;
  plan.set_recompute(setting.recompute);
  plan.dtype      = problem.dtype;
  plan.framework  = problem.framework;
  return plan;
}

GpuTypes gpu_types(const Cluster& cluster)
{
  GpuTypes types;
  std::vector<std::string> names;
  for (int d = 0; d < cluster.device_count(); ++d) {
    const std::string& gpu = cluster.gpu_of(d).name;
    auto it                = std::find(names.begin(), names.end(), gpu);
    if (it == names.end()) {
      names.push_back(gpu);
      types.representative.push_back(d);
      it = names.end() - 1;
    }
    types.type_of_device.push_back(static_cast<int>(it - names.begin()));
  }
  return types;
}

MemoryProbe CostModelProfiler::probe_memory(int device, int batch, ProfileSetting setting)
{
  const Plan plan       = profiling_plan(problem_, batch, setting);
  const int layers      = static_cast<int>(problem_.workload->layers.size());
  const DeviceMemory m  = stage_device_memory(plan, problem_, 0, 0, layers, 0);
  MemoryProbe probe;
  // The memory model's whole count, as plan_memory checks the plan later: what the framework holds is there
  // before the step, the activations and the short-lived buffers that grow with them come with the batch.
  const double workspace = problem_.workspace_bytes.value_or(0);
  probe.before_bytes = m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes + m.framework_bytes + workspace;
  probe.after_bytes  = m.total_bytes() + workspace;
  probe.total_bytes  = problem_.memory_capacity(device);
  return probe;
}

StepResult CostModelProfiler::run_step(int device, int batch, ProfileSetting setting)
{
  const MemoryProbe memory = probe_memory(device, batch, setting);
  if (memory.after_bytes > memory.total_bytes)
    return StepResult{true, 0};
  const GpuSpec& gpu    = problem_.cluster->gpu_of(device);
  const auto& workload  = *problem_.workload;
  const int layers      = static_cast<int>(workload.layers.size());
  const double forward  = compute_.layers_seconds(gpu, workload, 0, layers, 1, batch, problem_.dtype, false);
  const double backward = compute_.layers_seconds(gpu, workload, 0, layers, 1, batch, problem_.dtype, true);
  // Recompute runs the forward again, or the operators selective recompute reruns.
  const double rerun = setting.recompute == Recompute::full ? forward
                       : setting.recompute == Recompute::selective
                           ? compute_.selective_recompute_seconds(gpu, workload, 0, layers, 1, batch, problem_.dtype)
                           : 0;
  const double seconds = forward + backward + rerun;
  return StepResult{false, seconds};
}

DeviceProfile profile_device(Profiler& profiler, int device, ProfileSetting setting, int batch_cap)
{
  DeviceProfile profile;
  if (batch_cap < 1)
    return profile;
  // Memory grows linearly with the batch, so one forward bounds mbs from above (lines 1-8).
  const MemoryProbe probe  = profiler.probe_memory(device, 1, setting);
  const double per_sample  = probe.after_bytes - probe.before_bytes;
  const double room        = probe.total_bytes - probe.before_bytes;
  if (room < per_sample)
    return profile;
  const double linear = per_sample > 0 ? std::floor(room / per_sample) : batch_cap;
  const int estimate  = static_cast<int>(std::min<double>(linear, batch_cap));

  auto step = [&](int batch) {
    ++profile.steps;
    const StepResult result = profiler.run_step(device, batch, setting);
    if (!result.out_of_memory)
      profile.points.push_back(ProfilePoint{batch, result.step_seconds});
    return !result.out_of_memory;
  };

  // Exponential growth up to the estimate (lines 9-16)...
  int fits = 0, fails = 0;
  for (int batch = 1;; batch = std::min(2 * batch, estimate)) {
    if (!step(batch)) {
      fails = batch;
      break;
    }
    fits = batch;
    if (batch == estimate)
      break;
  }
  // ...then a binary search between the last success and the first out-of-memory step (lines 17-30).
  while (fails > 0 && fails - fits > 1) {
    const int mid = fits + (fails - fits) / 2;
    if (step(mid))
      fits = mid;
    else
      fails = mid;
  }
  profile.max_batch = fits;
  std::sort(profile.points.begin(), profile.points.end(),
            [](const ProfilePoint& a, const ProfilePoint& b) { return a.batch < b.batch; });
  return profile;
}

} // namespace hetsim::strategies
