/// Stragglers and slow links: a slowed device's delay propagates through a pipeline as its schedule says, and a
/// slowed link delays exactly the transfers that cross it.

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "models/workload.hpp"
#include "sim/platform/slowdowns.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

using namespace hetsim;

namespace {

const std::string kData = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/";

/// Four one-GPU nodes in one region whose links take no time: a pipeline's iteration is its compute alone.
Cluster instant_links()
{
  const Cluster catalog = load_cluster(kData + "cluster4.json");
  Cluster cluster("instant");
  const int gpu    = cluster.add_gpu(catalog.gpus()[0]);
  const int region = cluster.add_region("r", 0);
  const Link instant{std::numeric_limits<double>::infinity(), 0};
  for (int n = 0; n < 4; ++n)
    cluster.add_device(cluster.add_node(region, "n" + std::to_string(n), instant, instant), gpu);
  return cluster;
}

struct StageTimes {
  double forward = 0, backward = 0, optimizer = 0;
};

/// GPipe over stages 0..p-1 with m identical micro-batches (a flow shop of identical jobs): the last forward ends
/// at F = sum f + (m - 1) max f; stage s ends its backwards at F + sum_{i>=s} b_i + (m - 1) max_{i>=s} b_i, then
/// steps its optimizer; the iteration ends with the last stage to finish.
double gpipe_iteration_s(const std::vector<StageTimes>& stages, int micro_batches)
{
  double forward_sum = 0, forward_max = 0;
  for (const auto& s : stages) {
    forward_sum += s.forward;
    forward_max = std::max(forward_max, s.forward);
  }
  const double forwards_end = forward_sum + (micro_batches - 1) * forward_max;
  double end = 0, backward_sum = 0, backward_max = 0;
  for (int s = static_cast<int>(stages.size()) - 1; s >= 0; --s) {
    backward_sum += stages[s].backward;
    backward_max = std::max(backward_max, stages[s].backward);
    end = std::max(end, forwards_end + backward_sum + (micro_batches - 1) * backward_max + stages[s].optimizer);
  }
  return end;
}

std::string write_file(const std::string& name, const std::string& text)
{
  const auto file = std::filesystem::temp_directory_path() / ("hetsim_slowdowns_" + name);
  std::ofstream(file) << text;
  return file.string();
}

struct Pipeline {
  Cluster cluster           = instant_links();
  models::Workload workload = models::load_workload(kData + "model4.json");
  strategies::Plan plan     = strategies::plan_from_json(
      {{"tp", 1}, {"pp", 4}, {"dp", 1}, {"stage_starts", {0, 1, 2, 3}}, {"micro_batch", 1}, {"grad_accum", 4},
       {"schedule", "gpipe"}, {"dtype", "fp16"}},
      "plan", cluster, workload);
  strategies::Problem problem     = strategies::problem_for_plan(cluster, workload, plan);
  strategies::Schedule schedule   = strategies::lower(plan, problem);

  sim::SimResult replay(const std::vector<sim::Slowdown>& slowdowns) const
  {
    sim::SimOptions options;
    options.slowdowns = slowdowns.empty() ? nullptr : &slowdowns;
    return sim::simulate(plan, problem, schedule, options);
  }
};

/// Each stage's task durations from a replay's trace (identical across micro-batches).
std::vector<StageTimes> stage_times(const traces::Trace& trace, const strategies::Plan& plan)
{
  std::vector<StageTimes> stages(plan.pp);
  for (const auto& e : trace.events) {
    const int stage = e.device; // one device per stage
    const double d  = e.end_s - e.start_s;
    if (e.kind == "forward")
      stages[stage].forward = d;
    else if (e.kind == "backward")
      stages[stage].backward = d;
    else if (e.kind == "optimizer")
      stages[stage].optimizer = d;
  }
  return stages;
}

} // namespace

TEST_CASE("a straggler's delay propagates through a GPipe pipeline as the flow-shop closed form says")
{
  const Pipeline p;
  const sim::SimResult plain = p.replay({});
  const auto stages          = stage_times(plain.trace, p.plan);
  CHECK(plain.report.iteration_time_s == doctest::Approx(gpipe_iteration_s(stages, 4)).epsilon(1e-6));

  // Stage 2's device at half speed for the whole iteration: its forward, backward and optimizer take twice as
  // long, and it becomes the pipeline's bottleneck in both phases.
  const auto cluster = p.cluster;
  const std::vector<sim::Slowdown> half = sim::load_slowdowns(
      write_file("half.json", R"({"devices": [{"device": 2, "speed": 0.5}]})"), cluster);
  auto slowed = stages;
  slowed[2].forward *= 2;
  slowed[2].backward *= 2;
  slowed[2].optimizer *= 2;
  const sim::SimResult straggler = p.replay(half);
  CHECK(straggler.report.iteration_time_s == doctest::Approx(gpipe_iteration_s(slowed, 4)).epsilon(1e-6));
  CHECK(straggler.report.iteration_time_s > plain.report.iteration_time_s * 1.2);

  // A window that closes before the device's first task, or opens after the iteration, changes nothing.
  const double first_forward_on_2 = stages[0].forward + stages[1].forward;
  const std::vector<sim::Slowdown> early = sim::load_slowdowns(
      write_file("early.json", R"({"devices": [{"device": 2, "speed": 0.1, "until_s": )" +
                                   std::to_string(first_forward_on_2 * 0.9) + "}]}"),
      cluster);
  CHECK(p.replay(early).report.iteration_time_s == doctest::Approx(plain.report.iteration_time_s).epsilon(1e-9));
  const std::vector<sim::Slowdown> late = sim::load_slowdowns(
      write_file("late.json", R"({"devices": [{"device": 2, "speed": 0.1, "from_s": )" +
                                  std::to_string(plain.report.iteration_time_s * 1.01) + "}]}"),
      cluster);
  CHECK(p.replay(late).report.iteration_time_s == doctest::Approx(plain.report.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("a NIC slowed below the WAN becomes the ring's bottleneck and its all-reduce slows by the ratio")
{
  // cluster4: four one-GPU nodes with 1 Gb/s NICs, two regions joined at 0.1 Gb/s; data parallel over all four,
  // one all-reduce ring that crosses the WAN twice. A NIC at 0.05 of its rate (50 Mb/s) is half the WAN's.
  const Cluster cluster           = load_cluster(kData + "cluster4.json");
  const models::Workload workload = models::load_workload(kData + "model4.json");
  const auto plan = strategies::plan_from_json({{"tp", 1}, {"pp", 1}, {"dp", 4}, {"micro_batch", 1},
                                                {"grad_accum", 1}, {"dtype", "fp16"}},
                                               "plan", cluster, workload);
  const auto problem  = strategies::problem_for_plan(cluster, workload, plan);
  const auto schedule = strategies::lower(plan, problem);
  auto all_reduce_s   = [](const traces::Trace& trace) {
    double longest = 0;
    for (const auto& e : trace.events)
      if (e.kind == "all_reduce")
        longest = std::max(longest, e.end_s - e.start_s);
    return longest;
  };
  sim::SimOptions options;
  const auto plain = sim::simulate(plan, problem, schedule, options);
  const auto within_wan = sim::load_slowdowns(write_file("nic_fast.json", R"({"nics": [{"node": "e.0", "rate": 0.5}]})"),
                                              cluster);
  options.slowdowns = &within_wan;
  // At 500 Mb/s the NIC is still faster than the 100 Mb/s WAN: nothing changes.
  CHECK(sim::simulate(plan, problem, schedule, options).report.iteration_time_s ==
        doctest::Approx(plain.report.iteration_time_s).epsilon(1e-9));
  const auto below_wan = sim::load_slowdowns(write_file("nic_slow.json", R"({"nics": [{"node": "e.0", "rate": 0.05}]})"),
                                             cluster);
  options.slowdowns = &below_wan;
  const auto slowed = sim::simulate(plan, problem, schedule, options);
  CHECK(slowed.report.iteration_time_s > plain.report.iteration_time_s);
  // The ring moves at its slowest link: 50 against 100 Mb/s, so its bandwidth term doubles (latencies stay).
  CHECK(all_reduce_s(slowed.trace) / all_reduce_s(plain.trace) == doctest::Approx(2).epsilon(0.05));
}

TEST_CASE("a slowdown file's mistakes are one line naming the file and the field")
{
  const Cluster cluster = load_cluster(kData + "cluster4.json");
  struct Case {
    std::string text, expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"devices": [{"device": 4, "speed": 0.5}]})", "devices[0].device: expected a device of the cluster's 4"},
           {R"({"devices": [{"device": 0, "speed": 1.5}]})", "devices[0].speed: expected a fraction of the peak from 1e-6 to 1"},
           {R"({"devices": [{"device": 0, "speed": 0.5, "from_s": 1e-320}]})",
            "devices[0].from_s: expected 0 or seconds from 1e-9 to 1e9"},
           {R"({"devices": [{"device": 0, "speed": 0.5, "from_s": 5, "until_s": 2}]})", "devices[0].until_s"},
           {R"({"nics": [{"node": "x", "rate": 0.5}]})", "nics[0].node: expected a node of cluster 'four-cpus', got string \"x\""},
           {R"({"region_links": [{"between": ["east", "east"], "rate": 0.5}]})", "two different regions"},
           {R"({"devices": [{"device": 0, "speed": 0.5}, {"device": 0, "speed": 0.2}]})", "one window per device"},
       }) {
    CAPTURE(c.text);
    const std::string file = write_file("bad.json", c.text);
    try {
      (void)sim::load_slowdowns(file, cluster);
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.rfind(file + ": ", 0) == 0);
      CHECK(what.find(c.expected) != std::string::npos);
    }
  }
}
