/// Pipelined rings (one flow per member and phase) against step-by-step rings on full 3D plans.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

TEST_CASE("pipelined and step-by-step rings give the same iteration time within 1%")
{
  const Cluster cluster           = load_cluster("preset:case1_datacenter_on_demand");
  const models::Workload workload = models::load_workload("preset:gpt2-medium");
  for (const char* algorithm : {"ring", "hierarchical"}) {
    for (int zero : {0, 3}) {
      CAPTURE(algorithm);
      CAPTURE(zero);
      const nlohmann::json plan_json = {{"tp", 2},           {"pp", 4},
                                        {"dp", 8},           {"micro_batch", 1},
                                        {"grad_accum", 4},   {"zero_stage", zero},
                                        {"recompute", true}, {"collective_algorithm", algorithm}};
      const strategies::Plan plan    = strategies::plan_from_json(plan_json, "plan.json", cluster, workload);
      const strategies::Problem problem = strategies::problem_for_plan(cluster, workload, plan);
      const auto schedule  = strategies::lower(plan, problem);
      sim::SimOptions stepwise, pipelined;
      stepwise.trace = pipelined.trace = false;
      pipelined.pipelined_rings        = true;
      const double a                   = sim::simulate(plan, problem, schedule, stepwise).report.iteration_time_s;
      const double b                   = sim::simulate(plan, problem, schedule, pipelined).report.iteration_time_s;
      CHECK(b == doctest::Approx(a).epsilon(0.01));
    }
  }
}
