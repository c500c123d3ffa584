#include "strategies/search.hpp"

#include <algorithm>

namespace hetsim::strategies {

SearchResult search(const Planner& planner, const Problem& problem, const PlannerContext& context)
{
  SearchResult result;
  result.ranked   = planner.propose(problem, context);
  result.proposed = static_cast<long long>(result.ranked.size());
  std::sort(result.ranked.begin(), result.ranked.end(), better_candidate);
  // Equal plans have equal scores, so after sorting they are neighbours.
  result.ranked.erase(std::unique(result.ranked.begin(), result.ranked.end(),
                                  [](const Candidate& a, const Candidate& b) { return a.plan == b.plan; }),
                      result.ranked.end());
  return result;
}

} // namespace hetsim::strategies
