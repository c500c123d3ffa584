#include "exec/executor_profiler.hpp"

#include "core/median.hpp"
#include "exec/plugin.hpp"
#include "exec/rank.hpp"
#include "exec/store_directory.hpp"
#include "strategies/lowering/lower.hpp"

#include <chrono>
#include <limits>

namespace hetsim::exec {
namespace {

using strategies::Stream;
using strategies::TaskKind;

constexpr int kCompute = static_cast<int>(Stream::compute);

/// `device`'s compute tasks of `schedule`, in order, as the only device of a schedule of their own. The shape
/// (tp, dp, ZeRO stage) stays, so that the executor shards model states as the whole group would.
strategies::Schedule compute_of(const strategies::Schedule& schedule, int device)
{
  strategies::Schedule one;
  one.device_count = 1;
  one.tp           = schedule.tp;
  one.pp           = schedule.pp;
  one.dp           = schedule.dp;
  one.zero_stage   = schedule.zero_stage;
  one.recompute    = schedule.recompute;
  one.layer_count  = schedule.layer_count;
  one.stage_starts = schedule.stage_starts;
  one.queues.resize(1);
  for (int id : schedule.queues[device][kCompute]) {
    strategies::Task task = schedule.tasks[id];
    task.id               = static_cast<int>(one.tasks.size());
    task.device           = 0;
    task.deps.clear(); // one stream run in order: nothing else to wait for
    one.queues[0][kCompute].push_back(task.id);
    one.tasks.push_back(std::move(task));
  }
  return one;
}

/// Runs the tasks in order on the calling thread: what run_iteration does with a one-stream schedule, without
/// its threads, so that an OutOfMemory reaches the profiler as itself. Returns the seconds they took.
double run_tasks(Executor& executor, const strategies::Schedule& schedule, bool forward_only)
{
  const auto start = std::chrono::steady_clock::now();
  for (int id : schedule.queues[0][kCompute]) {
    const strategies::Task& task = schedule.tasks[id];
    if (forward_only && task.kind != TaskKind::forward)
      break;
    executor.compute(task);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

/// Declared in this order so that the executor goes first, then its rendezvous directory, then its schedule.
struct ExecutorProfiler::Step {
  strategies::Schedule schedule;
  StoreDirectory store;
  std::unique_ptr<Executor> executor;
};

ExecutorProfiler::ExecutorProfiler(const strategies::Problem& problem, ExecutorProfilerOptions options)
    : problem_(problem), options_(std::move(options))
{
  (void)load_executor(options_.executor); // fail here, once, when the executor does not exist
}

ExecutorProfiler::~ExecutorProfiler() = default;

std::unique_ptr<ExecutorProfiler::Step>
ExecutorProfiler::prepare_step(int device, int batch, strategies::ProfileSetting setting, double cap_bytes) const
{
  auto step = std::make_unique<Step>();
  step->schedule =
      compute_of(strategies::lower(strategies::profiling_plan(problem_, batch, setting), problem_), device);
  step->executor = load_executor(options_.executor);
  RankSetup setup; // the only rank, on loopback: no peer, no network namespace
  setup.store_dir    = step->store.path;
  setup.bind_address = "127.0.0.1";
  step->executor->connect(setup);
  Workload workload;
  workload.schedule             = &step->schedule;
  workload.model                = problem_.workload;
  workload.dtype                = problem_.dtype;
  workload.scale                = options_.scale;
  workload.hold_training_memory = true;
  workload.memory_cap_bytes     = cap_bytes;
  step->executor->prepare(workload);
  return step;
}

template <class Body>
auto ExecutorProfiler::measure(int device, int batch, strategies::ProfileSetting setting, Body&& body) const
{
  try {
    return body();
  } catch (const OutOfMemory&) {
    throw;
  } catch (const std::exception& e) {
    // Anything else is the executor failing, not the device filling up: the profile cannot go on.
    throw RankFailure("profile: the " + options_.executor + " executor failed on device " + std::to_string(device) +
                      " (batch " + std::to_string(batch) + ", " + setting.text() + "): " + e.what());
  }
}

strategies::MemoryProbe ExecutorProfiler::probe_memory(int device, int batch, strategies::ProfileSetting setting)
{
  strategies::MemoryProbe probe;
  probe.total_bytes = problem_.memory_capacity(device);
  try {
    measure(device, batch, setting, [&] {
      const auto step    = prepare_step(device, batch, setting, std::numeric_limits<double>::infinity());
      probe.before_bytes = step->executor->memory_use().current_bytes;
      run_tasks(*step->executor, step->schedule, true);
      probe.after_bytes = step->executor->memory_use().current_bytes;
    });
  } catch (const OutOfMemory&) {
    probe.after_bytes = std::numeric_limits<double>::infinity(); // the device itself refused
  }
  return probe;
}

strategies::StepResult ExecutorProfiler::run_step(int device, int batch, strategies::ProfileSetting setting)
{
  try {
    return measure(device, batch, setting, [&] {
      const auto step = prepare_step(device, batch, setting, problem_.memory_capacity(device));
      std::vector<double> seconds;
      for (int i = 0; i < options_.warmup + options_.repetitions; ++i) {
        const double s = run_tasks(*step->executor, step->schedule, false);
        if (i >= options_.warmup)
          seconds.push_back(s);
      }
      return strategies::StepResult{false, median(std::move(seconds))};
    });
  } catch (const OutOfMemory&) {
    return strategies::StepResult{true, 0};
  }
}

} // namespace hetsim::exec
