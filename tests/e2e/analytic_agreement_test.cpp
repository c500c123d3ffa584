/// The two cost engines must agree on simple cases: the α-β twin in costmodel/strategies and the SimGrid replay.

#include "core/units.hpp"
#include "costmodel/collective.hpp"
#include "models/workload.hpp"
#include "sim/replay/durations.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"
#include "tests/sim/sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace hetsim;
using sim::testing::ScheduleBuilder;

namespace {

std::vector<int> iota(int n)
{
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

/// `nodes` nodes of one GPU on links so fast that transfers are free: pipeline timings are their compute alone.
Cluster free_link_cluster(int nodes)
{
  return sim::testing::uniform_cluster(nodes, 1, Link{1e15, 1e-9}, Link{1e15, 1e-9}, 1e-9);
}

/// `count` equal layers given by their totals (a backward twice the forward, its weight gradients half of it).
models::Workload equal_layers(int count)
{
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l < count; ++l)
    layers.push_back({{"name", "l" + std::to_string(l)}, {"kind", "block"}, {"params", 1e6},
                      {"forward_flops_per_sample", 4e11}, {"activation_bytes_per_sample", 1e3},
                      {"saved_activation_bytes_per_sample", 1e3}});
  return models::workload_from_json({{"name", "equal"}, {"seq_len", 512}, {"layers", layers}}, "equal.json");
}

} // namespace

TEST_CASE("ring all-reduce on uniform links: simulator and alpha-beta agree within 1%")
{
  for (bool pipelined : {false, true}) {
    for (int n : {2, 4, 8, 16}) {
      for (double bytes : {1e6, 64e6, 512e6}) {
        CAPTURE(pipelined);
        CAPTURE(n);
        CAPTURE(bytes);
        // Single-GPU machines on one switch: every ring edge is a 10 Gb/s NIC, 50 µs end to end.
        const Cluster cluster = sim::testing::uniform_cluster(n, 1, Link{1200 * units::kGbps, 2e-6},
                                                              Link{10 * units::kGbps, 8e-6}, 40e-6);
        ScheduleBuilder builder(n);
        builder.collective(strategies::TaskKind::all_reduce, iota(n), bytes);
        sim::ReplayOptions options = sim::testing::seconds_from_flops();
        options.pipelined_rings    = pipelined;
        const auto timings         = sim::replay_isolated(cluster, builder.schedule(), options);
        double simulated           = 0;
        for (const auto& t : timings)
          simulated = std::max(simulated, t.end_s);
        const double analytic = costmodel::ring_seconds(cluster, iota(n), costmodel::CollectiveOp::all_reduce, bytes);
        CHECK(simulated == doctest::Approx(analytic).epsilon(0.01));
      }
    }
  }
}

TEST_CASE("data-parallel plan on a uniform cluster: simulator and analytic estimate agree within 5%")
{
  // 4 nodes x 4 GPUs, NVLink-class ports, 25 Gb/s NICs: GPT-2 medium, pure data parallelism.
  const Cluster cluster =
      sim::testing::uniform_cluster(4, 4, Link{1200 * units::kGbps, 2e-6}, Link{25 * units::kGbps, 5e-6}, 10e-6);
  const models::Workload workload = models::load_workload("preset:gpt2-medium");

  for (int zero : {0, 1, 2, 3}) {
    for (int accumulation : {1, 4}) {
      CAPTURE(zero);
      CAPTURE(accumulation);
      const auto plan_json = nlohmann::json{
          {"tp", 1}, {"pp", 1}, {"dp", 16}, {"micro_batch", 4}, {"grad_accum", accumulation}, {"zero_stage", zero}};
      const strategies::Plan plan = strategies::plan_from_json(plan_json, "dp.json", cluster, workload);
      const auto problem     = strategies::problem_for_plan(cluster, workload, plan);
      const auto schedule    = strategies::lower(plan, problem);
      const double simulated = sim::simulate(plan, problem, schedule).report.iteration_time_s;
      const double analytic  = strategies::estimate(plan, problem).iteration_time_s;
      CHECK(simulated == doctest::Approx(analytic).epsilon(0.05));
    }
  }
}

TEST_CASE("pipeline plans with overlapping and blocking sends: simulator and analytic estimate agree within 5%")
{
  // 4 nodes x 4 GPUs on 10 Gb/s NICs, GPT-2 medium over 4 stages (one per node) and 4 replicas: transfers are a
  // sizeable part of each step, so blocking them shows.
  const Cluster cluster =
      sim::testing::uniform_cluster(4, 4, Link{1200 * units::kGbps, 2e-6}, Link{10 * units::kGbps, 5e-6}, 10e-6);
  const models::Workload workload = models::load_workload("preset:gpt2-medium");
  std::vector<double> simulated;
  for (bool blocking : {false, true}) {
    CAPTURE(blocking);
    std::vector<int> placement; // stage s on node s: every boundary crosses a NIC
    for (int s = 0; s < 4; ++s)
      for (int r = 0; r < 4; ++r)
        placement.push_back(s * 4 + r);
    const auto plan_json = nlohmann::json{{"tp", 1},          {"pp", 4},       {"dp", 4},
                                          {"micro_batch", 4}, {"grad_accum", 8}, {"placement", placement},
                                          {"framework", {{"name", "megatron"}, {"blocking_sends", blocking}}}};
    const strategies::Plan plan = strategies::plan_from_json(plan_json, "pp.json", cluster, workload);
    const auto problem          = strategies::problem_for_plan(cluster, workload, plan);
    const auto schedule         = strategies::lower(plan, problem);
    simulated.push_back(sim::simulate(plan, problem, schedule).report.iteration_time_s);
    const double analytic = strategies::estimate(plan, problem).iteration_time_s;
    CHECK(simulated.back() == doctest::Approx(analytic).epsilon(0.05));
  }
  CHECK(simulated[1] > 1.02 * simulated[0]); // measured 2.9% slower
}

TEST_CASE("interleaved 1F1B: simulator and analytic estimate agree within 5%, and chunks shrink the bubble")
{
  // 4 nodes x 4 GPUs with fast NICs: GPT-2 medium over 4 stages of 4 replicas, 1, 2 and 3 chunks per stage.
  const Cluster cluster =
      sim::testing::uniform_cluster(4, 4, Link{1200 * units::kGbps, 2e-6}, Link{200 * units::kGbps, 5e-6}, 10e-6);
  const models::Workload workload = models::load_workload("preset:gpt2-medium");
  std::vector<double> simulated, bubble;
  for (int chunks : {1, 2, 3}) {
    CAPTURE(chunks);
    const auto plan_json = nlohmann::json{{"tp", 1},          {"pp", 4},         {"dp", 4},
                                          {"micro_batch", 2}, {"grad_accum", 8}, {"virtual_stages", chunks}};
    const strategies::Plan plan = strategies::plan_from_json(plan_json, "vp.json", cluster, workload);
    const auto problem          = strategies::problem_for_plan(cluster, workload, plan);
    const auto result           = sim::simulate(plan, problem, strategies::lower(plan, problem));
    simulated.push_back(result.report.iteration_time_s);
    bubble.push_back(result.report.bubble.fraction);
    CHECK(simulated.back() == doctest::Approx(strategies::estimate(plan, problem).iteration_time_s).epsilon(0.05));
  }
  CHECK(simulated[1] < simulated[0]);
  CHECK(bubble[1] < bubble[0]);
  CHECK(bubble[2] < bubble[1]);
}

TEST_CASE("interleaved 1F1B's bubble is (p - 1) / (v m) of the ideal time on a uniform cluster, within 2%")
{
  // 16 equal layers on 4 stages of one GPU each, links so fast that transfers are free: the iteration is the ideal
  // (m micro-batches' forward and backward per stage) plus the bubble, which chunks divide.
  const Cluster cluster           = free_link_cluster(4);
  const models::Workload workload = equal_layers(16);
  const int p = 4, m = 8;
  for (int v : {1, 2, 4}) {
    CAPTURE(v);
    const auto plan = strategies::plan_from_json(
        {{"tp", 1}, {"pp", p}, {"dp", 1}, {"micro_batch", 1}, {"grad_accum", m}, {"virtual_stages", v}},
        "vp.json", cluster, workload);
    const auto problem  = strategies::problem_for_plan(cluster, workload, plan);
    const auto schedule = strategies::lower(plan, problem);
    const auto report   = sim::simulate(plan, problem, schedule).report;
    // The ideal: one stage's compute for all its micro-batches, from its devices' busy time (optimizer excluded).
    double ideal = 0;
    for (const auto& task : schedule.tasks)
      if (task.device == 0 && (task.kind == strategies::TaskKind::forward ||
                               task.kind == strategies::TaskKind::backward))
        ideal += sim::compute_time_model(cluster, workload, plan, nullptr, nullptr)(task);
    double optimizer = 0;
    for (const auto& task : schedule.tasks)
      if (task.device == 0 && task.kind == strategies::TaskKind::optimizer)
        optimizer = sim::compute_time_model(cluster, workload, plan, nullptr, nullptr)(task);
    const double bubble = (report.iteration_time_s - optimizer - ideal) / ideal;
    CHECK(bubble == doctest::Approx(static_cast<double>(p - 1) / (v * m)).epsilon(0.02));
  }
}

TEST_CASE("ZB-H1's bubble is (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W) on a uniform cluster, within 2%")
{
  // As above: 16 equal layers on 4 stages, free transfers. F, B and W are one stage's forward, input-gradient and
  // weight-gradient steps of one micro-batch (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1).
  const Cluster cluster           = free_link_cluster(4);
  const models::Workload workload = equal_layers(16);
  const int p = 4, m = 8;
  std::map<std::string, double> iteration;
  for (const std::string schedule_name : {"1f1b", "zero_bubble"}) {
    CAPTURE(schedule_name);
    const auto plan = strategies::plan_from_json(
        {{"tp", 1}, {"pp", p}, {"dp", 1}, {"micro_batch", 1}, {"grad_accum", m}, {"schedule", schedule_name}},
        "zb.json", cluster, workload);
    const auto problem  = strategies::problem_for_plan(cluster, workload, plan);
    const auto schedule = strategies::lower(plan, problem);
    const auto report   = sim::simulate(plan, problem, schedule).report;
    const auto seconds  = sim::compute_time_model(cluster, workload, plan, nullptr, nullptr);
    double forward = 0, input = 0, weight = 0, optimizer = 0; // device 0's, over all micro-batches
    for (const auto& task : schedule.tasks) {
      if (task.device != 0)
        continue;
      if (task.kind == strategies::TaskKind::optimizer)
        optimizer = seconds(task);
      else if (task.kind == strategies::TaskKind::forward)
        forward += seconds(task);
      else if (task.part == strategies::BackwardPart::weight_gradients)
        weight += seconds(task);
      else if (task.kind == strategies::TaskKind::backward)
        input += seconds(task);
    }
    const double ideal  = forward + input + weight;
    const double bubble = (report.iteration_time_s - optimizer - ideal) / ideal;
    const double ramp   = schedule_name == "zero_bubble" ? forward + input - weight : ideal;
    CHECK(bubble == doctest::Approx((p - 1) * ramp / (m * ideal)).epsilon(0.02));
    CHECK(report.iteration_time_s == doctest::Approx(strategies::estimate(plan, problem).iteration_time_s).epsilon(0.02));
    if (schedule_name == "zero_bubble") { // the weight gradients are half a backward, as much as a forward
      CHECK(weight == doctest::Approx(forward).epsilon(0.02));
      CHECK(weight > 0.25 * ideal);
    }
    iteration[schedule_name] = report.iteration_time_s;
  }
  CHECK(iteration["zero_bubble"] < iteration["1f1b"]);
}

TEST_CASE("ZB-H1 on GPT-2 medium: simulator and analytic estimate agree within 5%, and it beats 1F1B")
{
  const Cluster cluster =
      sim::testing::uniform_cluster(4, 4, Link{1200 * units::kGbps, 2e-6}, Link{200 * units::kGbps, 5e-6}, 10e-6);
  const models::Workload workload = models::load_workload("preset:gpt2-medium");
  for (int tp : {1, 2}) {
    std::map<std::string, double> simulated;
    for (const std::string schedule_name : {"1f1b", "zero_bubble"}) {
      CAPTURE(tp);
      CAPTURE(schedule_name);
      const auto plan_json = nlohmann::json{{"tp", tp},         {"pp", 4},         {"dp", 4 / tp},
                                            {"micro_batch", 2}, {"grad_accum", 8}, {"schedule", schedule_name}};
      const strategies::Plan plan = strategies::plan_from_json(plan_json, "zb.json", cluster, workload);
      const auto problem          = strategies::problem_for_plan(cluster, workload, plan);
      simulated[schedule_name]    = sim::simulate(plan, problem, strategies::lower(plan, problem)).report.iteration_time_s;
      CHECK(simulated[schedule_name] ==
            doctest::Approx(strategies::estimate(plan, problem).iteration_time_s).epsilon(0.05));
    }
    CHECK(simulated["zero_bubble"] < simulated["1f1b"]);
  }
}
