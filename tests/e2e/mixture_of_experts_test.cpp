/// Mixtral-8x7B end to end: its published Hugging Face config, expert parallelism where a dense layout runs out
/// of memory, the replay of its all-to-alls, the planners' choice, and the analytic estimate against the replay.

#include "dgx_fixtures.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/search/planner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace hetsim;

namespace {

/// Eight DGX A100 80GB nodes: 300 GB/s NVSwitch ports, `nic_gbps` per node to the fabric.
Cluster dgx_a100_64(int nic_gbps = 1600)
{
  return e2e::dgx_cluster("dgx_a100_64", "A100-SXM4-80GB", 8, 300, nic_gbps);
}

models::Workload mixtral()
{
  return e2e::hf_model("mixtral-8x7b.json", 4096);
}

strategies::Plan plan_of(nlohmann::json json, const Cluster& cluster, const models::Workload& workload)
{
  json["global_batch"] = 256;
  json["zero_stage"]   = 1;
  json["dtype"]        = "bf16";
  return strategies::plan_from_json(json, "plan.json", cluster, workload);
}

} // namespace

TEST_CASE("Mixtral-8x7B on 64 A100-80GB: ep 8 fits where ep 1 does not, and the replay runs its iteration")
{
  const Cluster cluster           = dgx_a100_64();
  const models::Workload workload = mixtral();
  CHECK(workload.total_params() == doctest::Approx(46.7e9).epsilon(0.001));
  const auto dense   = plan_of({{"tp", 1}, {"pp", 8}, {"dp", 8}, {"micro_batch", 1}}, cluster, workload);
  const auto experts = plan_of({{"tp", 1}, {"pp", 8}, {"dp", 8}, {"ep", 8}, {"micro_batch", 1}}, cluster, workload);
  const auto problem = strategies::problem_for_plan(cluster, workload, experts);
  const double capacity = 80 * units::kGiB;
  CHECK(e2e::largest_need(dense, problem) > capacity);
  CHECK(e2e::largest_need(experts, problem) < capacity);
  // A device holds its stage's attention and one expert in eight.
  CHECK(strategies::plan_memory(dense, problem)[8].parameter_bytes >
        4 * strategies::plan_memory(experts, problem)[8].parameter_bytes);

  const auto schedule = strategies::lower(experts, problem);
  const auto result   = sim::simulate(experts, problem, schedule);
  const double replay = result.report.iteration_time_s;
  CHECK(replay > 0);
  // Every all-to-all ran on the expert-parallel stream, and took time (each group of 8 inside a DGX).
  int exchanges = 0;
  for (const auto& event : result.trace.events)
    if (event.kind == "all_to_all") {
      ++exchanges;
      CHECK(event.stream == "expert_parallel");
      CHECK(event.members == 8);
      CHECK(event.end_s > event.start_s);
    }
  CHECK(exchanges == 64 * 32 / 8 * 2 * 2 * 32); // devices x blocks per stage x (dispatch, combine) x passes x mbs
  CHECK(result.report.mfu > 0.2);
  CHECK(result.report.mfu < 0.7);
  CHECK(strategies::estimate(experts, problem).iteration_time_s == doctest::Approx(replay).epsilon(0.1));
}

TEST_CASE("expert-parallel plans: the analytic estimate within 10% of the replay, groups inside or across nodes")
{
  const models::Workload workload = mixtral();
  const nlohmann::json plans[]    = {
      {{"tp", 1}, {"pp", 8}, {"dp", 8}, {"ep", 8}, {"micro_batch", 1}},
      {{"tp", 2}, {"pp", 2}, {"dp", 16}, {"ep", 4}, {"micro_batch", 1}, {"stage_starts", {0, 17}}},
      {{"tp", 2}, {"pp", 1}, {"dp", 32}, {"ep", 8}, {"micro_batch", 1}, {"recompute", true}}, // across 2 nodes
      {{"tp", 4}, {"pp", 2}, {"dp", 8}, {"ep", 8}, {"micro_batch", 2}},                      // across 4 nodes
  };
  for (int nic_gbps : {1600, 200}) {
    const Cluster cluster = dgx_a100_64(nic_gbps);
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

TEST_CASE("the megatron planner's fastest plan for Mixtral-8x7B on 64 A100-80GB is expert-parallel")
{
  const Cluster cluster           = dgx_a100_64();
  const models::Workload workload = mixtral();
  strategies::Problem problem     = strategies::problem_for_plan(
      cluster, workload, plan_of({{"tp", 1}, {"pp", 8}, {"dp", 8}, {"micro_batch", 1}}, cluster, workload));
  problem.global_batch = 256;
  strategies::PlannerContext context;
  const auto candidates = strategies::find_planner("megatron").make()->propose(problem, context);
  const strategies::Candidate* fastest = nullptr;
  for (const auto& c : candidates) {
    // The smallest model-parallel layouts (tp x pp of 2) fit only with the experts spread.
    if (c.fits() && c.plan.tp * c.plan.pp == 2)
      CHECK(c.plan.ep > 1);
    if (c.fits() && (!fastest || c.estimate.iteration_time_s < fastest->estimate.iteration_time_s))
      fastest = &c;
  }
  REQUIRE(fastest != nullptr);
  CHECK(fastest->plan.ep > 1);
}
