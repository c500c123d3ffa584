/// The analytic estimate with a calibration: the per-collective overhead γ of each link class counts once per
/// collective call, as the simulator waits it.

#include "fixtures.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

costmodel::Calibration with_overhead(double seconds)
{
  costmodel::Calibration calibration;
  calibration.links["inter_node"] = {2e-6, 1 / 12.5e9, seconds};
  return calibration;
}

} // namespace

TEST_CASE("the estimate counts the calibrated per-collective overhead of every collective call")
{
  const Cluster cluster            = make_cluster(2, 2); // a data-parallel ring over both nodes: inter_node
  const models::Workload workload  = make_workload(4);
  const Problem problem            = make_problem(cluster, workload);
  constexpr double kOverhead       = 0.25; // far above everything else, so it dominates the difference
  const costmodel::Calibration none = with_overhead(0), some = with_overhead(kOverhead);

  for (int zero_stage : {0, 1, 2, 3}) {
    CAPTURE(zero_stage);
    Plan plan         = make_plan(cluster, workload, 1, 1, 4, 1, 2);
    plan.zero_stage   = zero_stage;
    plan.bucket_bytes = 1.5 * (1 << 20) * 2; // 1.5 layers of fp16 gradients: 3 buckets per stage
    const double without = estimate(plan, problem, &none).iteration_time_s;
    const double with    = estimate(plan, problem, &some).iteration_time_s;
    // At least one call is exposed; at most every collective of the lowered schedule is.
    const auto schedule = lower(plan, problem);
    CHECK(with - without >= doctest::Approx(kOverhead));
    CHECK(with - without <= kOverhead * static_cast<double>(schedule.collectives.size()) + 1e-9);
  }

  SUBCASE("ZeRO-3 gathers layer by layer: each layer's gather is a call of its own")
  {
    Plan plan       = make_plan(cluster, workload, 1, 1, 4, 1, 1);
    plan.zero_stage = 3;
    const double difference =
        estimate(plan, problem, &some).iteration_time_s - estimate(plan, problem, &none).iteration_time_s;
    // Forward and backward gather each of the 4 layers, and the gradients are reduced at least once.
    CHECK(difference >= doctest::Approx((2 * 4 + 1) * kOverhead));
  }
}
