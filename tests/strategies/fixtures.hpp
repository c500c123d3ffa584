#pragma once
/// Small clusters, workloads and schedule checks shared by the strategies tests. Workloads are built by hand
/// so that these tests do not depend on the model builders.

#include "core/cluster.hpp"
#include "core/units.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/plan/problem.hpp"

#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace hetsim::strategies::testing {

inline GpuSpec v100()
{
  GpuSpec spec{"V100-SXM2-16GB", 16 * units::kGiB, 900 * units::kGBps, 125 * units::kTera, 15.7 * units::kTera};
  spec.bf16 = false; // Volta's tensor cores take fp16 only
  return spec;
}

inline GpuSpec a100()
{
  return GpuSpec{"A100-SXM4-80GB", 80 * units::kGiB, 2039 * units::kGBps, 312 * units::kTera, 19.5 * units::kTera};
}

/// `nodes` nodes of `per_node` GPUs each, in one region.
inline Cluster make_cluster(int nodes, int per_node, const GpuSpec& spec = v100(), const std::string& name = "test")
{
  Cluster cluster(name);
  const int gpu    = cluster.add_gpu(spec);
  const int region = cluster.add_region("dc", 5 * units::kMicrosecond);
  for (int n = 0; n < nodes; ++n) {
    const int node = cluster.add_node(region, "node" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < per_node; ++d)
      cluster.add_device(node, gpu);
  }
  return cluster;
}

/// A transformer block with round figures: `params` parameters, 2 TP all-reduces per pass.
inline models::Layer block(const std::string& name, double params = 1 << 20)
{
  models::Layer layer;
  layer.name                              = name;
  layer.kind                              = "transformer";
  layer.params                            = params;
  layer.forward_flops_per_sample          = 1e9;
  layer.backward_flops_per_sample         = 2e9;
  layer.activation_bytes_per_sample       = 1 * units::kMiB;
  layer.saved_activation_bytes_per_sample = 8 * units::kMiB;
  layer.tensor_parallel_all_reduces       = 2;
  return layer;
}

/// `count` identical transformer blocks.
inline models::Workload make_workload(int count, double params_per_layer = 1 << 20)
{
  models::Workload workload;
  workload.name    = "toy";
  workload.seq_len = 512;
  for (int l = 0; l < count; ++l)
    workload.layers.push_back(block("block" + std::to_string(l), params_per_layer));
  return workload;
}

inline Plan make_plan(const Cluster& cluster, const models::Workload& workload, int tp, int pp, int dp,
                      int micro_batch = 1, int grad_accum = 1)
{
  Plan plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.dp = dp;
  plan.placement.resize(cluster.device_count());
  std::iota(plan.placement.begin(), plan.placement.end(), 0);
  plan.stage_starts = uniform_stage_starts(static_cast<int>(workload.layers.size()), pp);
  plan.micro_batch.assign(dp, micro_batch);
  plan.grad_accum.assign(dp, grad_accum);
  return plan;
}

inline Problem make_problem(const Cluster& cluster, const models::Workload& workload)
{
  Problem problem;
  problem.cluster  = &cluster;
  problem.workload = &workload;
  return problem;
}

/// A name Schedule::task_name gives two tasks, or an empty string when every task's name is its own.
inline std::string duplicate_task_name(const Schedule& schedule)
{
  std::set<std::string> names;
  for (const Task& task : schedule.tasks)
    if (!names.insert(schedule.task_name(task.id)).second)
      return schedule.task_name(task.id);
  return "";
}

/// Why a schedule is malformed or would deadlock, or an empty string. Replays it with zero-duration tasks:
/// a task of an ordered stream runs when it heads its queue and its deps are done; a collective runs when every
/// member's task can; a send runs when its deps are done and a recv when its deps and its send are.
inline std::string replay_problem(const Schedule& schedule)
{
  const auto& tasks = schedule.tasks;
  const int count   = static_cast<int>(tasks.size());
  std::vector<int> seen(count, 0);
  for (int d = 0; d < schedule.device_count; ++d)
    for (int s = 0; s < kStreamCount; ++s)
      for (int id : schedule.queues[d][s]) {
        if (id < 0 || id >= count)
          return "queue holds unknown id " + std::to_string(id);
        if (tasks[id].device != d || static_cast<int>(tasks[id].stream) != s)
          return "task " + std::to_string(id) + " is queued on the wrong device or stream";
        ++seen[id];
      }
  for (int id = 0; id < count; ++id) {
    const Task& task = tasks[id];
    if (task.id != id)
      return "task " + std::to_string(id) + " has id " + std::to_string(task.id);
    if (seen[id] != 1)
      return "task " + std::to_string(id) + " is queued " + std::to_string(seen[id]) + " times";
    for (int dep : task.deps)
      if (dep < 0 || dep >= count || tasks[dep].device != task.device)
        return "task " + std::to_string(id) + " has a bad dep " + std::to_string(dep);
    if (task.kind == TaskKind::send || task.kind == TaskKind::recv) {
      if (task.match < 0 || task.match >= count || tasks[task.match].match != id ||
          tasks[task.match].device != task.peer || tasks[task.match].peer != task.device ||
          tasks[task.match].kind == task.kind || tasks[task.match].bytes != task.bytes)
        return "task " + std::to_string(id) + " (" + schedule.task_name(id) + ") has a bad match";
    }
    if (is_collective(task.kind)) {
      if (task.collective < 0 || task.collective >= static_cast<int>(schedule.collectives.size()))
        return "task " + std::to_string(id) + " has no collective";
      const Collective& c = schedule.collectives[task.collective];
      if (c.kind != task.kind || c.bytes != task.bytes || c.tasks.size() != c.devices.size())
        return "collective of task " + std::to_string(id) + " disagrees with it";
    }
  }

  std::vector<char> done(count, 0);
  std::vector<std::array<std::size_t, kStreamCount>> head(schedule.device_count);
  for (auto& h : head)
    h.fill(0);
  auto deps_done = [&](int id) {
    for (int dep : tasks[id].deps)
      if (!done[dep])
        return false;
    return true;
  };
  auto at_head = [&](int id) {
    const Task& task = tasks[id];
    const auto& queue = schedule.queues[task.device][static_cast<int>(task.stream)];
    const std::size_t h = head[task.device][static_cast<int>(task.stream)];
    return h < queue.size() && queue[h] == id;
  };
  auto finish = [&](int id) {
    done[id] = 1;
    if (tasks[id].stream != Stream::pipeline)
      ++head[tasks[id].device][static_cast<int>(tasks[id].stream)];
  };
  int finished = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < schedule.device_count; ++d)
      for (int s = 0; s < kStreamCount; ++s) {
        const auto& queue = schedule.queues[d][s];
        if (s == static_cast<int>(Stream::pipeline)) {
          for (int id : queue) {
            if (done[id] || !deps_done(id))
              continue;
            if (tasks[id].kind == TaskKind::recv && !done[tasks[id].match])
              continue;
            finish(id);
            ++finished;
            progress = true;
          }
          continue;
        }
        while (head[d][s] < queue.size()) {
          const int id = queue[head[d][s]];
          if (!deps_done(id))
            break;
          if (!is_collective(tasks[id].kind)) {
            finish(id);
            ++finished;
            progress = true;
            continue;
          }
          const Collective& c = schedule.collectives[tasks[id].collective];
          bool ready = true;
          for (int member : c.tasks)
            ready = ready && at_head(member) && deps_done(member);
          if (!ready)
            break;
          for (int member : c.tasks)
            finish(member);
          finished += static_cast<int>(c.tasks.size());
          progress = true;
        }
      }
  }
  if (finished != count) {
    for (int id = 0; id < count; ++id)
      if (!done[id])
        return "deadlock: " + std::to_string(count - finished) + " tasks never run, first " + schedule.task_name(id);
  }
  return "";
}

} // namespace hetsim::strategies::testing
