/// Kernel events: written on a thread of their own and read back apart from the tasks; the simulator's divide
/// each compute task's interval over the kernels it launches as the cost model times them; compare_traces sums
/// them per kernel name.

#include "core/error.hpp"
#include "costmodel/kernel_time.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/task_kernels.hpp"
#include "traces/kernel_events.hpp"
#include "traces/trace.hpp"
#include "traces/validate.hpp"

#include "tests/models/gpt_shape.hpp"
#include "tests/strategies/fixtures.hpp"
#include "trace_fixtures.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace hetsim;
using namespace hetsim::traces;
using hetsim::traces::testing::make_event;

namespace {

/// GPT-2-shaped, 2 blocks of hidden 256 on 2 V100 in a 2-stage pipeline, every task event timed 1 s apart.
struct Simulated {
  Cluster cluster           = strategies::testing::make_cluster(1, 2);
  models::Workload workload = models::build_transformer(models::testing::gpt_shape(2, 256, 4, 512, 128));
  strategies::Schedule schedule;
  Trace trace;

  Simulated()
  {
    strategies::Plan plan = strategies::testing::make_plan(cluster, workload, 1, 2, 1, 2, 2);
    schedule = strategies::lower(plan, strategies::testing::make_problem(cluster, workload));
    trace.device_labels = {"d0", "d1"};
    for (const strategies::Task& task : schedule.tasks)
      trace.events.push_back(make_event(task.id, schedule.task_name(task.id),
                                        std::string(strategies::task_kind_name(task.kind)), "compute", task.device,
                                        task.id, task.id + 0.5 + 0.01 * task.id, 0, task.flops));
  }
};

} // namespace

TEST_CASE("kernel events round-trip on a thread of their own, apart from the task events")
{
  Trace t;
  t.device_labels = {"d0"};
  t.events.push_back(make_event(4, "fwd", "forward", "compute", 0, 1.0, 2.0, 0, 1e9));
  t.kernels.push_back(KernelEvent{4, 0, "qkv", 1.0, 1.25});
  t.kernels.push_back(KernelEvent{4, 0, "softmax", 1.25, 2.0});
  std::ostringstream out;
  write_chrome_trace(t, out);
  const auto doc = nlohmann::json::parse(out.str());
  int task_tid = -1;
  std::set<int> kernel_tids;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    if (e["cat"] == "kernel")
      kernel_tids.insert(e["tid"].get<int>());
    else
      task_tid = e["tid"].get<int>();
  }
  REQUIRE(kernel_tids.size() == 1);
  CHECK(*kernel_tids.begin() != task_tid);

  const auto path = std::filesystem::temp_directory_path() / "hetsim_kernel_trace_test.json";
  std::ofstream(path) << out.str();
  const Trace back = read_chrome_trace(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.events.size() == 1);
  REQUIRE(back.kernels.size() == 2);
  CHECK(back.kernels[1].task_id == 4);
  CHECK(back.kernels[1].name == "softmax");
  CHECK(back.kernels[1].start_s == 1.25);
  CHECK(back.kernels[1].end_s == 2.0);
}

TEST_CASE("a device id past any cluster's is refused by name, not allocated")
{
  const auto path = std::filesystem::temp_directory_path() / "hetsim_huge_pid_trace.json";
  for (const char* pid : {"100000000", "2147483647"}) {
    CAPTURE(pid);
    std::ofstream(path) << R"({"traceEvents": [{"name": "process_name", "ph": "M", "pid": )" << pid
                        << R"(, "args": {"name": "d"}}]})";
    CHECK_THROWS_WITH_AS(read_chrome_trace(path.string()),
                         doctest::Contains("traceEvents[0].pid: expected a device id below 1048576"), InputError);
  }
  std::filesystem::remove(path);
}

TEST_CASE("predicted kernels tile each compute task's interval in launch order, shared as the model times them")
{
  const Simulated s;
  const costmodel::ComputeModel compute;
  const auto kernels = predicted_kernel_events(s.trace, s.schedule, s.cluster, s.workload, compute, Dtype::fp16, 1.0);
  const GpuSpec& gpu = s.cluster.gpu_of(0);
  const auto constants = compute.constants(gpu);
  std::size_t at = 0;
  int tasks      = 0;
  for (const TraceEvent& e : s.trace.events) {
    const strategies::Task& task = s.schedule.tasks[e.task_id];
    if (task.kind != strategies::TaskKind::forward && task.kind != strategies::TaskKind::backward)
      continue;
    ++tasks;
    const auto launched = strategies::task_kernels(task, s.workload, 1, 1.0);
    REQUIRE(at + launched.size() <= kernels.size());
    double model_total = 0;
    for (const auto& k : launched)
      model_total += costmodel::kernel_seconds(gpu, constants, k, Dtype::fp16) + constants.launch_gap_s;
    double previous_end = e.start_s;
    for (const auto& k : launched) {
      const KernelEvent& got = kernels[at++];
      CHECK(got.task_id == task.id);
      CHECK(got.device == task.device);
      CHECK(got.name == k.name);
      CHECK(got.start_s == doctest::Approx(previous_end));
      const double share = (costmodel::kernel_seconds(gpu, constants, k, Dtype::fp16) + constants.launch_gap_s) /
                           model_total;
      CHECK(got.end_s - got.start_s == doctest::Approx(share * (e.end_s - e.start_s)));
      previous_end = got.end_s;
    }
    CHECK(previous_end == e.end_s);
  }
  CHECK(tasks > 0);
  CHECK(at == kernels.size());
}

TEST_CASE("compare_traces sums kernels per name and refuses a trace whose kernels are another plan's")
{
  Simulated s;
  const costmodel::ComputeModel compute;
  s.trace.kernels = predicted_kernel_events(s.trace, s.schedule, s.cluster, s.workload, compute, Dtype::fp16, 1.0);
  Trace measured  = s.trace;
  for (KernelEvent& k : measured.kernels)
    if (k.name == "mlp_up")
      k.end_s = k.start_s + 2 * (k.end_s - k.start_s); // measured twice as long as predicted
  const Comparison c = compare_traces(measured, s.trace);
  REQUIRE(c.by_kernel.count("mlp_up") == 1);
  CHECK(c.by_kernel.at("mlp_up").error == doctest::Approx(-0.5));
  CHECK(c.by_kernel.at("mlp_up").kernels == 4); // 2 blocks x 2 micro-batches of forward
  CHECK(c.by_kernel.at("qkv").error == doctest::Approx(0.0));

  measured.kernels.pop_back();
  CHECK_THROWS_WITH_AS(compare_traces(measured, s.trace), doctest::Contains("kernels but the plan's schedule launches"),
                       InputError);
}
