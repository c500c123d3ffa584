#include "strategies/planners/poplar/device_batch_plan.hpp"

#include "core/error.hpp"
#include "strategies/search/plan_space.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace hetsim::strategies {

ClusterProfile profile_cluster(const Problem& problem, Profiler& profiler, int requested_stage)
{
  const Cluster& cluster = *problem.cluster;
  ClusterProfile result;
  GpuTypes types        = gpu_types(cluster);
  result.type_of_device = std::move(types.type_of_device);
  result.representative = std::move(types.representative);
  std::string first_short; // the types that could not hold a sequence at the requested stage
  std::string last_short;  // ... at ZeRO-3 without recompute
  std::string short_of;
  // Recompute only when no stage holds a sequence without it, the least rerun first: it costs a forward pass
  // (or its attention core) more per step.
  for (const Recompute recompute : recompute_choices(*problem.workload)) {
    for (int stage = requested_stage; stage <= 3; ++stage) {
      const ProfileSetting setting(stage, recompute);
      result.profiles.clear();
      short_of.clear();
      for (int device : result.representative) {
        result.profiles.push_back(profile_device(profiler, device, setting, problem.global_batch));
        if (result.profiles.back().max_batch == 0)
          short_of += (short_of.empty() ? "" : ", ") + cluster.gpu_of(device).name;
      }
      if (stage == requested_stage && recompute == Recompute::none)
        first_short = short_of;
      if (stage == 3 && recompute == Recompute::none)
        last_short = short_of;
      if (short_of.empty()) {
        result.setting = setting;
        result.note    = setting.text();
        if (recompute != Recompute::none)
          result.note += " (" + last_short + " cannot hold one sequence without it, even at ZeRO-3)";
        else if (stage != requested_stage)
          result.note += " (raised from ZeRO-" + std::to_string(requested_stage) + ": " + first_short +
                         " cannot hold one sequence)";
        return result;
      }
    }
  }
  char params[32];
  std::snprintf(params, sizeof params, "%.2fB", problem.workload->total_params() / 1e9);
  // Name the cluster file's fields that chose the GPUs too short of memory: that is what the user can change.
  std::string described;
  for (std::size_t k = 0; k < result.representative.size(); ++k)
    if (result.profiles[k].max_batch == 0)
      described += (described.empty() ? "" : ", ") + cluster.describe_gpu(result.representative[k]);
  throw InfeasiblePlan("even ZeRO-3 with activation recompute does not fit one sequence of " +
                       problem.workload->name + " (" + params + " parameters) on " + described);
}

Plan per_device_plan(const Problem& problem, const std::vector<DeviceBatch>& batches, ProfileSetting setting)
{
  const int n = static_cast<int>(batches.size());
  HETSIM_ASSERT(n == problem.cluster->device_count());
  Plan plan;
  plan.dp = n;
  plan.placement.resize(n);
  std::iota(plan.placement.begin(), plan.placement.end(), 0);
  plan.stage_starts = {0};
  plan.zero_stage   = setting.zero_stage;
  plan.set_recompute(setting.recompute);
  plan.dtype        = problem.dtype;
  plan.framework    = problem.framework;
  bool partial_last = false;
  for (const DeviceBatch& b : batches) {
    plan.micro_batch.push_back(b.micro_batch);
    plan.grad_accum.push_back(b.grad_accum);
    plan.last_micro_batch.push_back(b.last_micro_batch);
    partial_last = partial_last || b.last_micro_batch != b.micro_batch;
  }
  if (!partial_last)
    plan.last_micro_batch.clear();
  return plan;
}

std::vector<int> requested_zero_stages(const PlannerContext& context, const char* planner)
{
  for (const std::string& flag : context.flags) {
    if (flag.rfind("zero=", 0) != 0)
      continue;
    const std::string value = flag.substr(5);
    if (value.size() != 1 || value[0] < '0' || value[0] > '3')
      throw InputError(std::string(planner) + ": flag '" + flag + "': expected zero=0, zero=1, zero=2 or zero=3");
    return {value[0] - '0'};
  }
  return {0, 1, 2, 3};
}

} // namespace hetsim::strategies
