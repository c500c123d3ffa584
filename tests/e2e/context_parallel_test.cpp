/// Llama-3-8B at 128k tokens end to end: context parallelism where one sequence per replica runs out of memory,
/// the replay of its rings of keys and values, and the analytic estimate against the replay.

#include "dgx_fixtures.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/planner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace hetsim;

namespace {

/// Four DGX H100 nodes: 450 GB/s NVSwitch ports (NVLink 4), `nic_gbps` per node to the fabric.
Cluster dgx_h100_32(int nic_gbps = 3200)
{
  return e2e::dgx_cluster("dgx_h100_32", "H100-SXM5-80GB", 4, 450, nic_gbps);
}

models::Workload llama_3_8b(int seq_len = 131072)
{
  return e2e::hf_model("llama-3-8b.json", seq_len);
}

strategies::Plan plan_of(nlohmann::json json, const Cluster& cluster, const models::Workload& workload)
{
  json["micro_batch"]  = 1;
  json["global_batch"] = 8;
  json["zero_stage"]   = 1;
  json["dtype"]        = "bf16";
  return strategies::plan_from_json(json, "plan.json", cluster, workload);
}

} // namespace

TEST_CASE("Llama-3-8B at 128k tokens on 32 H100-80GB: cp 4 fits where cp 1 does not, and the replay runs its rings")
{
  const Cluster cluster           = dgx_h100_32();
  const models::Workload workload = llama_3_8b();
  const auto whole   = plan_of({{"tp", 8}, {"dp", 4}}, cluster, workload);
  const auto split   = plan_of({{"tp", 8}, {"cp", 4}, {"dp", 1}}, cluster, workload);
  const auto problem = strategies::problem_for_plan(cluster, workload, split);
  const double capacity = 80 * units::kGiB;
  CHECK(e2e::largest_need(whole, problem) > capacity);
  CHECK(e2e::largest_need(split, problem) < capacity);

  const auto schedule = strategies::lower(split, problem);
  const auto result   = sim::simulate(split, problem, schedule);
  const double replay = result.report.iteration_time_s;
  // Every ring ran on the context-parallel stream over the four nodes, and took time.
  int rings = 0;
  for (const auto& event : result.trace.events)
    if (event.stream == "context_parallel") {
      ++rings;
      CHECK(event.members == 4);
      CHECK(event.end_s > event.start_s);
    }
  CHECK(rings == 32 * 32 * 8 * 3); // devices x blocks x micro-batches x (a gather forward, a gather and a scatter back)
  CHECK(result.report.mfu > 0.3);
  CHECK(result.report.mfu < 0.7);
  CHECK(strategies::estimate(split, problem).iteration_time_s == doctest::Approx(replay).epsilon(0.1));
}

TEST_CASE("context-parallel plans: the analytic estimate within 10% of the replay, rings hidden or exposed")
{
  const models::Workload workload = llama_3_8b();
  const nlohmann::json plans[]    = {
      {{"tp", 8}, {"cp", 4}, {"dp", 1}},                                // rings across the four nodes
      {{"tp", 2}, {"cp", 4}, {"dp", 4}, {"recompute", "full"}},         // rings inside a node
      {{"tp", 4}, {"cp", 4}, {"pp", 2}, {"dp", 1}, {"recompute", "full"}}, // rings across two nodes, pipelined
  };
  // On 200 Gb/s NICs a ring across nodes outlasts its attention kernel and is partly exposed.
  for (int nic_gbps : {3200, 200}) {
    const Cluster cluster = dgx_h100_32(nic_gbps);
    for (const auto& json : plans) {
      CAPTURE(nic_gbps);
      CAPTURE(json.dump());
      const auto plan     = plan_of(json, cluster, workload);
      const auto problem  = strategies::problem_for_plan(cluster, workload, plan);
      const double replay = sim::simulate(plan, problem, strategies::lower(plan, problem)).report.iteration_time_s;
      CHECK(strategies::estimate(plan, problem).iteration_time_s == doctest::Approx(replay).epsilon(0.1));
    }
  }
}

TEST_CASE("the megatron planner cuts 128k-token sequences over context-parallel ranks, and 8k ones not")
{
  const Cluster cluster = dgx_h100_32();
  for (int seq_len : {131072, 8192}) {
    CAPTURE(seq_len);
    const models::Workload workload = llama_3_8b(seq_len);
    strategies::Problem problem = strategies::problem_for_plan(
        cluster, workload, plan_of({{"tp", 8}, {"dp", 4}}, cluster, workload));
    problem.global_batch = 8;
    strategies::PlannerContext context;
    const auto candidates = strategies::find_planner("megatron").make()->propose(problem, context);
    const strategies::Candidate* fastest = nullptr;
    for (const auto& c : candidates)
      if (c.fits() && (!fastest || c.estimate.iteration_time_s < fastest->estimate.iteration_time_s))
        fastest = &c;
    REQUIRE(fastest != nullptr);
    CAPTURE(fastest->note);
    if (seq_len == 131072) {
      CHECK(fastest->plan.cp > 1);
      CHECK_FALSE(fastest->plan.recompute);
    } else {
      for (const auto& c : candidates)
        CHECK(c.plan.cp == 1); // one sequence fits without: nothing to cut
    }
  }
}
