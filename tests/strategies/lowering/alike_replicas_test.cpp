/// Alike replicas: the estimate and the memory model time one replica of each kind and stand it for the others
/// (fold.hpp's alike_replicas). Forcing every replica to be worked out (a node-pair link equal to the region's
/// own makes none alike) must give the same answers to the last bit, on a mixed cluster across two regions.

#include "fixtures.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/memory.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Two regions of two 4-GPU nodes each, A100 in the first and V100 in the second, joined by 10 Gb/s; with
/// `neutral_link`, nodes 0 and 1 are joined by a link equal to their region's switch.
Cluster mixed_cluster(bool neutral_link)
{
  Cluster cluster("mixed");
  const int fast = cluster.add_gpu(a100()), slow = cluster.add_gpu(v100());
  const int east = cluster.add_region("east", 5 * units::kMicrosecond);
  const int west = cluster.add_region("west", 8 * units::kMicrosecond);
  for (int n = 0; n < 4; ++n) {
    const int node = cluster.add_node(n < 2 ? east : west, "node" + std::to_string(n),
                                      Link{n < 2 ? 300 * units::kGBps : 150 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < 4; ++d)
      cluster.add_device(node, n < 2 ? fast : slow);
  }
  for (int a = 0; a < 2; ++a)
    cluster.set_inter_region(a, 1 - a, Link{10 * units::kGbps, 2 * units::kMillisecond});
  if (neutral_link)
    cluster.add_override({0, 1, Link{Link{}.bandwidth_bytes_per_s, 5 * units::kMicrosecond}});
  return cluster;
}

struct Shape {
  int tp, pp, dp, micro_batch, grad_accum, zero_stage;
  bool recompute;
};

} // namespace

TEST_CASE("replicas on alike devices are alike; a different batch or a node-pair link makes each its own")
{
  const Cluster cluster     = make_cluster(4, 4);
  const auto workload       = make_workload(4);
  Plan plan                 = make_plan(cluster, workload, 1, 1, 16);
  std::vector<int> alike    = alike_replicas(plan, cluster);
  CHECK(alike[15] == 0);
  plan.micro_batch[3] = 2;
  plan.grad_accum[3]  = 1;
  alike               = alike_replicas(plan, cluster);
  CHECK(alike[3] == 3);
  CHECK(alike[4] == 0);

  Cluster linked = make_cluster(4, 4);
  linked.add_override({0, 1, Link{Link{}.bandwidth_bytes_per_s, 5 * units::kMicrosecond}});
  alike = alike_replicas(make_plan(linked, workload, 1, 1, 16), linked);
  for (int r = 0; r < 16; ++r)
    CHECK(alike[r] == r);
}

TEST_CASE("the estimate and the memory of alike replicas are those of every replica worked out")
{
  const Cluster folded = mixed_cluster(false), each = mixed_cluster(true);
  const auto workload  = make_workload(8);
  const Problem folded_problem = make_problem(folded, workload), each_problem = make_problem(each, workload);
  const std::vector<Shape> shapes = {{1, 1, 16, 2, 2, 0, false}, {2, 2, 4, 1, 8, 1, false},
                                     {4, 2, 2, 2, 4, 2, true},   {1, 4, 4, 1, 8, 0, true},
                                     {2, 1, 8, 1, 2, 3, false},  {1, 2, 8, 4, 1, 1, false}};
  int folds = 0;
  for (const Shape& s : shapes) {
    CAPTURE(s.tp);
    CAPTURE(s.pp);
    CAPTURE(s.dp);
    Plan plan       = make_plan(folded, workload, s.tp, s.pp, s.dp, s.micro_batch, s.grad_accum);
    plan.zero_stage = s.zero_stage;
    plan.set_recompute(s.recompute ? Recompute::full : Recompute::none);
    const std::vector<int> alike = alike_replicas(plan, folded);
    for (int r = 0; r < plan.dp; ++r)
      folds += alike[r] != r;

    const PlanEstimate a = estimate(plan, folded_problem), b = estimate(plan, each_problem);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.pipeline_s == b.pipeline_s);
    CHECK(a.data_parallel_s == b.data_parallel_s);
    const auto memory_a = plan_memory(plan, folded_problem), memory_b = plan_memory(plan, each_problem);
    for (std::size_t d = 0; d < memory_a.size(); ++d)
      CHECK(memory_a[d].total_bytes() == memory_b[d].total_bytes());
  }
  CHECK(folds > 0); // the shapes do have alike replicas to stand for one another

  // Context-parallel groups tie their replicas' timing together, not their memory.
  Plan plan = make_plan(folded, workload, 1, 2, 8, 2, 2);
  plan.cp   = 2;
  CHECK(alike_replicas(plan, folded)[2] == 2);
  const std::vector<int> for_memory = alike_replicas(plan, folded, AlikeFor::memory);
  CHECK(std::count_if(for_memory.begin(), for_memory.end(), [r = 0](int first) mutable { return first != r++; }) > 0);
  const auto memory_a = plan_memory(plan, folded_problem), memory_b = plan_memory(plan, each_problem);
  for (std::size_t d = 0; d < memory_a.size(); ++d)
    CHECK(memory_a[d].total_bytes() == memory_b[d].total_bytes());
}
