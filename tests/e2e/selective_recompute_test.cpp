/// Selective recompute end to end: GPT-2 medium (non-fused attention, as trained) on four 16 GB V100. At
/// micro-batch 4 its attention scores do not fit without recompute; rerunning only attention's core fits and
/// costs less than rerunning every layer, the planners find it, and the estimate agrees with the replay.

#include "core/cluster_json.hpp"
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

using namespace hetsim;

namespace {

Cluster four_v100()
{
  const nlohmann::json node = {{"name", "n"},
                               {"gpu", "V100-SXM2-16GB"},
                               {"devices", 4},
                               {"intra_node", {{"bandwidth_GBps", 150}, {"latency_us", 2}}},
                               {"nic", {{"bandwidth_gbps", 100}, {"latency_us", 5}}}};
  return cluster_from_json(
      {{"name", "v100x4"}, {"regions", {{{"name", "r"}, {"latency_us", 5}, {"nodes", {node}}}}}}, "v100x4.json");
}

} // namespace

TEST_CASE("GPT-2 medium at micro-batch 4 on 16 GB V100: selective recompute fits where none does, faster than full")
{
  const Cluster cluster           = four_v100();
  const models::Workload workload = models::load_workload("preset:gpt2-medium");
  std::map<std::string, double> seconds, need;
  for (const char* mode : {"none", "selective", "full"}) {
    const auto plan = strategies::plan_from_json(
        {{"dp", 4}, {"micro_batch", 4}, {"global_batch", 64}, {"recompute", mode}}, "plan.json", cluster, workload);
    const auto problem = strategies::problem_for_plan(cluster, workload, plan);
    double largest     = 0;
    for (const auto& device : strategies::plan_memory(plan, problem))
      largest = std::max(largest, device.total_bytes());
    need[mode]           = largest;
    seconds[mode]        = sim::simulate(plan, problem, strategies::lower(plan, problem)).report.iteration_time_s;
    CHECK(strategies::estimate(plan, problem).iteration_time_s == doctest::Approx(seconds[mode]).epsilon(0.05));
  }
  const double capacity = 16 * units::kGiB;
  CHECK(need["none"] > capacity);
  CHECK(need["selective"] < capacity);
  CHECK(need["full"] < need["selective"]);
  CHECK(seconds["none"] < seconds["selective"]);
  CHECK(seconds["selective"] < seconds["full"]);

  // The megatron planner keeps micro-batch 4 with selective recompute rather than full.
  strategies::Problem problem = strategies::problem_for_plan(
      cluster, workload,
      strategies::plan_from_json({{"dp", 4}, {"micro_batch", 1}, {"global_batch", 64}}, "plan.json", cluster,
                                 workload));
  problem.global_batch = 64;
  strategies::PlannerContext context;
  bool found = false;
  for (const auto& c : strategies::find_planner("megatron").make()->propose(problem, context))
    if (c.plan.micro_batch[0] == 4 && c.plan.tp == 1 && c.plan.pp == 1) {
      found = true;
      CHECK(c.plan.selective_recompute);
      CHECK_FALSE(c.plan.recompute);
      CHECK(c.fits());
    }
  CHECK(found);
}
