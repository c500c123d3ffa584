/// Daly's model against the failure process it describes, and the chosen interval against Young's and Daly's.

#include "reliability/goodput.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace hetsim::reliability;

namespace {

/// Wall time to finish `segment_s` (work and checkpoint) when failures arrive with mean `costs.mtbf_s`: each
/// failure loses the segment so far and costs a restart, which a failure may interrupt too.
double simulated_segment_s(double segment_s, const CheckpointCosts& costs, std::mt19937_64& random)
{
  std::exponential_distribution<double> failure(1 / costs.mtbf_s);
  double wall = 0;
  for (;;) {
    const double at = failure(random);
    if (at >= segment_s)
      return wall + segment_s;
    wall += at;
    for (;;) { // the restart
      const double during = failure(random);
      if (during >= costs.restart_s) {
        wall += costs.restart_s;
        break;
      }
      wall += during;
    }
  }
}

} // namespace

TEST_CASE("the expected wall time of an interval is the failure process's mean, failures in restarts included")
{
  std::mt19937_64 random(7);
  for (const CheckpointCosts costs : {CheckpointCosts{600, 1200, 3 * 3600.0}, CheckpointCosts{60, 300, 3600},
                                      CheckpointCosts{10, 0, 1e5}}) {
    CAPTURE(costs.mtbf_s);
    const double work = 2 * 3600;
    double sum        = 0;
    const int runs    = 200000;
    for (int i = 0; i < runs; ++i)
      sum += simulated_segment_s(work + costs.blocking_s, costs, random);
    CHECK(expected_interval_wall_s(work, costs) == doctest::Approx(sum / runs).epsilon(0.01));
  }
}

TEST_CASE("without failures an interval costs its work and checkpoint, and the best interval is the whole run")
{
  const CheckpointCosts never{30, 600, std::numeric_limits<double>::infinity()};
  CHECK(expected_interval_wall_s(100, never) == 130);
  const Goodput g = best_goodput(10, 1e6, never, 1e5);
  CHECK(g.interval_iterations == 10000);
  CHECK(g.useful_fraction == doctest::Approx(1e5 / (1e5 + 30)));
  CHECK(g.expected_failures == 0);
}

TEST_CASE("where checkpoints are short against the MTBF, the best interval is Young's and Daly's")
{
  // delta / M = 1e-4: Young's first-order interval is within 1% of the optimum, Daly's higher-order one closer.
  const CheckpointCosts costs{36, 300, 360000};
  const Goodput g = best_goodput(1.0, 4e6, costs, 30 * 86400.0);
  CHECK(g.interval_s == doctest::Approx(young_interval_s(costs)).epsilon(0.01));
  CHECK(g.interval_s == doctest::Approx(daly_interval_s(costs)).epsilon(0.001));
  CHECK(g.useful_fraction >= g.young_fraction);
  // Daly's first-order waste: delta/tau + tau/2M + R/M, at the optimum 2 sqrt(delta/2M) + R/M.
  CHECK(1 - g.useful_fraction == doctest::Approx(std::sqrt(2 * 36.0 / 360000) + 300.0 / 360000).epsilon(0.02));
  CHECK(g.tokens_per_s == doctest::Approx(4e6 * g.useful_fraction));
  CHECK(g.expected_failures == doctest::Approx(30 * 86400.0 / 360000));
}

TEST_CASE("a checkpoint as long as the MTBF is where Young's interval fails and the exact optimum keeps more")
{
  const CheckpointCosts costs{1800, 600, 3600};
  const Goodput g = best_goodput(60, 1e6, costs, 7 * 86400.0);
  CHECK(g.useful_fraction > g.young_fraction);
  CHECK(g.useful_fraction > 0);
  CHECK(g.useful_fraction < 0.5);
}

TEST_CASE("an asynchronous checkpoint's interval is never shorter than its write to storage")
{
  CheckpointCosts costs{1, 60, 3600};
  costs.min_interval_s = 2000; // Young's interval is 85 s
  const Goodput g      = best_goodput(10, 1e6, costs, 86400);
  CHECK(g.interval_s >= 2000);
  CHECK(g.interval_iterations == 200);
}
