#include "sim/rescore.hpp"

#include "strategies/lower.hpp"

namespace hetsim::sim {

Rescored rescore(const std::vector<strategies::Candidate>& candidates, int count, const strategies::Problem& problem,
                 const SimOptions& options, const strategies::ProgressFn& progress)
{
  Rescored result;
  SimOptions quiet = options;
  quiet.trace      = false;
  int simulated    = 0;
  const int total  = std::min<int>(count, static_cast<int>(candidates.size()));
  for (int i = 0; i < static_cast<int>(candidates.size()) && simulated < count; ++i) {
    if (!candidates[i].fits())
      continue;
    const auto& plan = candidates[i].plan;
    const strategies::Schedule schedule = strategies::lower(plan, problem);
    result.index.push_back(i);
    result.reports.push_back(simulate(plan, problem, schedule, quiet).report);
    ++simulated;
    if (progress)
      progress("simulating the best candidates", simulated, total);
  }
  return result;
}

} // namespace hetsim::sim
