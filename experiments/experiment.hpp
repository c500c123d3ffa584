#pragma once
/// What the experiment programs share: a planner's best candidates re-scored in the simulator, and CSV output.

#include "sim/simulate/rescore.hpp"
#include "strategies/search/planner.hpp"
#include "strategies/search/search.hpp"

#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hetsim::experiments {

struct Scored {
  strategies::Candidate candidate;
  sim::Report report;
};

/// The planner's `top` best candidates by estimate, simulated; the best simulated one, or nullopt when none fits.
inline std::optional<Scored> best_simulated(const strategies::Planner& planner, const strategies::Problem& problem,
                                            const strategies::PlannerContext& context, int top)
{
  const auto result = strategies::search(planner, problem, context);
  sim::SimOptions options;
  options.pipelined_rings = true; // within 1% of step-by-step rings, several times faster
  options.trace           = false;
  const auto rescored     = sim::rescore(result.ranked, top, problem, options);
  std::optional<Scored> best;
  for (std::size_t i = 0; i < rescored.index.size(); ++i)
    if (!best || rescored.reports[i].iteration_time_s < best->report.iteration_time_s)
      best = Scored{result.ranked[rescored.index[i]], rescored.reports[i]};
  return best;
}

/// Opens `path` for writing or throws.
inline std::ofstream open_output(const std::string& path)
{
  std::ofstream out(path);
  if (!out)
    throw std::runtime_error("cannot write " + path);
  return out;
}

} // namespace hetsim::experiments
