#pragma once
/// A planner's search: its proposals scored, stripped of duplicates (equal plans, or plans whose placements differ
/// with the same estimate) and ranked (feasible first, then by the analytic estimate). Re-scoring the best in the
/// simulator is sim::rescore's part.

#include "strategies/search/planner.hpp"

#include <string>
#include <vector>

namespace hetsim::strategies {

struct SearchResult {
  std::vector<Candidate> ranked; ///< best first
  long long proposed = 0;        ///< proposals before duplicates were removed
  /// Distinct candidates left out because the framework cannot launch them (PlannerContext::cannot_launch),
  /// and why the best of them could not.
  long long unlaunchable = 0;
  std::string first_unlaunchable_reason;
};

SearchResult search(const Planner& planner, const Problem& problem, const PlannerContext& context);

} // namespace hetsim::strategies
