/// The stream runner's timing: host time around each call, or the device-measured duration an executor reports,
/// anchored at the call.

#include "exec/stream_runner.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace hetsim;
using namespace hetsim::exec;

namespace {

/// Device 0 runs a forward then a backward on its compute stream.
strategies::Schedule two_compute_tasks()
{
  strategies::Schedule schedule;
  schedule.device_count = 1;
  for (auto kind : {strategies::TaskKind::forward, strategies::TaskKind::backward}) {
    strategies::Task task;
    task.id   = static_cast<int>(schedule.tasks.size());
    task.kind = kind;
    if (task.id > 0)
      task.deps = {task.id - 1};
    schedule.tasks.push_back(task);
  }
  schedule.queues.resize(1);
  schedule.queues[0][static_cast<int>(strategies::Stream::compute)] = {0, 1};
  return schedule;
}

/// Every call takes 20 ms of host time; reports `device_seconds` when set.
class SleepingExecutor final : public Executor {
public:
  explicit SleepingExecutor(std::optional<double> device_seconds) : device_seconds_(device_seconds) {}
  void connect(const RankSetup&) override {}
  void prepare(const Workload&) override {}
  TaskResult compute(const strategies::Task&) override
  {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return TaskResult{1e9, device_seconds_, {}};
  }
  TaskResult collective(const strategies::Task&) override { return {}; }
  TaskResult send(const strategies::Task&) override { return {}; }
  TaskResult recv(const strategies::Task&) override { return {}; }
  void barrier() override {}
  MemoryUse memory_use() const override { return {}; }

private:
  std::optional<double> device_seconds_;
};

} // namespace

TEST_CASE("stream runner: host time around the call when the executor measures nothing")
{
  const auto schedule = two_compute_tasks();
  SleepingExecutor executor(std::nullopt);
  const auto records = run_iteration(executor, schedule, 0, Clock::now());
  REQUIRE(records.size() == 2);
  for (const auto& r : records) {
    CHECK(r.end_s - r.start_s >= 0.02);
    CHECK(r.flops == 1e9);
  }
  CHECK(records[1].start_s >= records[0].end_s);
}

TEST_CASE("stream runner: a device-measured duration replaces the host's, anchored at the call")
{
  const auto schedule = two_compute_tasks();
  SleepingExecutor executor(0.005);
  const auto records = run_iteration(executor, schedule, 0, Clock::now());
  REQUIRE(records.size() == 2);
  for (const auto& r : records)
    CHECK(r.end_s - r.start_s == doctest::Approx(0.005));
  // The next task was called after the host saw the first end: the trace keeps that order.
  CHECK(records[1].start_s >= records[0].start_s + 0.02);
}

TEST_CASE("stream runner: a device duration longer than the call is cut to the call")
{
  const auto schedule = two_compute_tasks();
  SleepingExecutor executor(10.0);
  const auto records = run_iteration(executor, schedule, 0, Clock::now());
  REQUIRE(records.size() == 2);
  CHECK(records[0].end_s - records[0].start_s < 1.0);
  CHECK(records[1].start_s >= records[0].end_s);
}
