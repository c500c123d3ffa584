/// The lowering emits exactly the data-parallel traffic of the ZeRO stage's closed-form volume.

#include "costmodel/zero.hpp"
#include "fixtures.hpp"
#include "strategies/lowering/lower.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Bytes device `device` sends in the data-parallel collectives of a schedule, with ring decompositions.
double data_parallel_bytes_sent(const Schedule& schedule, int device)
{
  double sent = 0;
  for (const Collective& c : schedule.collectives) {
    if (schedule.tasks[c.tasks.front()].stream != Stream::data_parallel)
      continue;
    bool member = false;
    for (int d : c.devices)
      member = member || d == device;
    if (!member)
      continue;
    const double n     = static_cast<double>(c.devices.size());
    const double share = (n - 1) / n * c.bytes;
    sent += c.kind == TaskKind::all_reduce ? 2 * share : share;
  }
  return sent;
}

} // namespace

TEST_CASE("lowered data-parallel traffic equals the ZeRO volume of each stage")
{
  const Cluster cluster           = make_cluster(2, 4);
  const models::Workload workload = make_workload(6, 3 << 20);
  for (int zero = 0; zero <= 3; ++zero) {
    for (int accumulation : {1, 3}) {
      CAPTURE(zero);
      CAPTURE(accumulation);
      // pp 2 x dp 4: every stage has 3 layers of 3 Mi parameters.
      Plan plan       = make_plan(cluster, workload, 1, 2, 4, 2, accumulation);
      plan.zero_stage = zero;
      plan.bucket_bytes = 5 << 20; // several buckets, one of them split across layers
      const Schedule schedule = lower(plan, make_problem(cluster, workload));
      const double stage_bytes = 3.0 * (3 << 20) * 2; // 16-bit weights and gradients of one stage
      const double expected =
          costmodel::zero_bytes_sent_per_device(zero, stage_bytes, stage_bytes, 4, accumulation);
      for (int device = 0; device < 8; ++device)
        CHECK(data_parallel_bytes_sent(schedule, device) == doctest::Approx(expected));
    }
  }
  CHECK(costmodel::zero_bytes_sent_per_device(0, 100, 100, 1, 4) == 0);
}
