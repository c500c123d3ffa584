#pragma once
/// The judge of a search: the best candidates lowered and replayed in the simulator.

#include "sim/simulate/simulate.hpp"
#include "strategies/search/planner.hpp"

#include <string>
#include <utility>
#include <vector>

namespace hetsim::sim {

struct Rescored {
  std::vector<int> index;      ///< position of each simulated candidate in the input
  std::vector<Report> reports; ///< same order
  /// Candidates among the first `count` that lower to more tasks than a replay holds: position, and why. They
  /// keep their estimate.
  std::vector<std::pair<int, std::string>> too_large;
};

/// Lowers and simulates the first `count` candidates that fit in memory, in their order; candidates that do not
/// fit are skipped, and so are those too large to replay (Rescored::too_large). Traces are not built. Simulations run in parallel, one per core; the result does not depend
/// on how many.
Rescored rescore(const std::vector<strategies::Candidate>& candidates, int count, const strategies::Problem& problem,
                 const SimOptions& options, const strategies::ProgressFn& progress = {});

} // namespace hetsim::sim
