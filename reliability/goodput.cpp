#include "reliability/goodput.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::reliability {

double young_interval_s(const CheckpointCosts& costs)
{
  return std::sqrt(2 * costs.blocking_s * costs.mtbf_s);
}

double daly_interval_s(const CheckpointCosts& costs)
{
  const double delta = costs.blocking_s, m = costs.mtbf_s;
  if (delta >= 2 * m)
    return m;
  return std::sqrt(2 * delta * m) * (1 + std::sqrt(delta / (2 * m)) / 3 + delta / (18 * m)) - delta;
}

double expected_interval_wall_s(double work_s, const CheckpointCosts& costs)
{
  const double m = costs.mtbf_s;
  if (std::isinf(m))
    return work_s + costs.blocking_s;
  // expm1 keeps the figure exact when the interval is a tiny fraction of the MTBF (the failure-free limit).
  return m * std::exp(costs.restart_s / m) * std::expm1((work_s + costs.blocking_s) / m);
}

double useful_fraction(double work_s, const CheckpointCosts& costs)
{
  return work_s / expected_interval_wall_s(work_s, costs);
}

Goodput best_goodput(double iteration_s, double tokens_per_iteration, const CheckpointCosts& costs, double run_s)
{
  // The useful fraction of k iterations is unimodal in k (Daly 2006, §3): a ternary search over whole numbers
  // finds its peak in about 50 steps for any run length.
  auto fraction = [&](long k) { return useful_fraction(static_cast<double>(k) * iteration_s, costs); };
  const long most = std::max(1L, static_cast<long>(std::min(run_s / iteration_s, 1e9)));
  const long fewest = std::clamp(static_cast<long>(std::ceil(costs.min_interval_s / iteration_s)), 1L, most);
  long lo = fewest, hi = most;
  while (hi - lo > 2) {
    const long a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
    if (fraction(a) < fraction(b))
      lo = a + 1;
    else
      hi = b;
  }
  long best = lo;
  for (long c = lo + 1; c <= hi; ++c)
    if (fraction(c) > fraction(best))
      best = c;

  Goodput g;
  g.interval_iterations = static_cast<int>(std::min<long>(best, 1L << 30));
  g.interval_s          = static_cast<double>(best) * iteration_s;
  g.useful_fraction     = fraction(best);
  g.tokens_per_s        = tokens_per_iteration / iteration_s * g.useful_fraction;
  g.young_interval_s    = young_interval_s(costs);
  g.young_fraction      = fraction(std::clamp(std::lround(g.young_interval_s / iteration_s), fewest, most));
  g.expected_failures   = run_s / costs.mtbf_s;
  return g;
}

} // namespace hetsim::reliability
