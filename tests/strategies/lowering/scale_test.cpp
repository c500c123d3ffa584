/// A scaled Schedule: the same tasks, FLOPs and parameters by the square of the scale, activations by it.

#include "fixtures.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/scale.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

TEST_CASE("scale_schedule: same tasks and order; work scaled by stream; still a valid schedule")
{
  const Cluster cluster           = make_cluster(2, 4);
  const models::Workload workload = make_workload(4);
  Plan plan                       = make_plan(cluster, workload, 2, 2, 2, 1, 2);
  plan.zero_stage                 = 3;
  const Problem problem           = make_problem(cluster, workload);
  const Schedule full             = lower(plan, problem);
  const Schedule scaled           = scale_schedule(full, 0.5);

  REQUIRE(scaled.tasks.size() == full.tasks.size());
  CHECK(scaled.queues == full.queues);
  CHECK(replay_problem(scaled).empty());
  std::map<Stream, int> seen;
  for (std::size_t i = 0; i < full.tasks.size(); ++i) {
    const Task& a = full.tasks[i];
    const Task& b = scaled.tasks[i];
    CHECK(b.deps == a.deps);
    CHECK(b.flops == doctest::Approx(a.flops * 0.25));
    CHECK(b.params == doctest::Approx(a.params * 0.25));
    CHECK(b.bytes == doctest::Approx(a.bytes * (a.stream == Stream::data_parallel ? 0.25 : 0.5)));
    CHECK(b.bytes == scaled_bytes(a, 0.5));
    if (a.bytes > 0)
      ++seen[a.stream];
  }
  // Parameters (ZeRO-3 gathers, gradient reduce-scatters), activations (pipeline, tensor parallel) both occur.
  CHECK(seen[Stream::data_parallel] > 0);
  CHECK(seen[Stream::pipeline] > 0);
  CHECK(seen[Stream::tensor_parallel] > 0);
  CHECK(scale_schedule(full, 1).tasks[0].flops == full.tasks[0].flops);
}
