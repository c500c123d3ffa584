/// The judge of a search: a candidate too large to replay keeps its estimate instead of ending the search.

#include "sim/simulate/rescore.hpp"

#include "sim_fixtures.hpp"
#include "strategies/search/planner.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

TEST_CASE("rescore: a candidate that lowers to more tasks than a replay holds is set aside, the others replayed")
{
  // 64 single-GPU nodes, one layer: data parallelism over all 64 with 200,000 micro-batches each lowers to some
  // 25 million tasks (a forward and a backward per micro-batch and device), past what a replay holds.
  const Cluster cluster = sim::testing::uniform_cluster(64, 1, {150e9, 2e-6}, {100e9, 5e-6}, 1e-5);
  models::Workload workload;
  workload.name    = "one-layer";
  workload.seq_len = 128;
  models::Layer layer;
  layer.name                              = "block";
  layer.kind                              = "transformer";
  layer.params                            = 1e6;
  layer.forward_flops_per_sample          = 1e9;
  layer.backward_flops_per_sample         = 2e9;
  layer.activation_bytes_per_sample       = 1e5;
  layer.saved_activation_bytes_per_sample = 1e6;
  workload.layers.push_back(layer);

  auto plan_with = [&](int grad_accum) {
    strategies::Plan plan;
    plan.dp           = 64;
    plan.stage_starts = {0};
    for (int d = 0; d < 64; ++d)
      plan.placement.push_back(d);
    plan.micro_batch.assign(64, 1);
    plan.grad_accum.assign(64, grad_accum);
    return plan;
  };
  strategies::Problem problem;
  problem.cluster  = &cluster;
  problem.workload = &workload;
  const strategies::PlannerContext context;
  problem.global_batch = 64 * 200'000;
  const strategies::Candidate huge = strategies::evaluate(plan_with(200'000), problem, context);
  problem.global_batch = 64 * 2;
  const strategies::Candidate small = strategies::evaluate(plan_with(2), problem, context);
  REQUIRE(huge.fits());
  REQUIRE(small.fits());

  sim::SimOptions exact; // unfolded: folding would replay one replica of each
  exact.exact = true;
  const sim::Rescored rescored = sim::rescore({huge, small}, 2, problem, exact);
  CHECK(rescored.index == std::vector<int>{1});
  CHECK(rescored.reports.size() == 1);
  REQUIRE(rescored.too_large.size() == 1);
  CHECK(rescored.too_large.front().first == 0);
  CHECK(rescored.too_large.front().second.find("a replay can hold") != std::string::npos);
}
