#include "strategies/search/search.hpp"

#include <algorithm>

namespace hetsim::strategies {

SearchResult search(const Planner& planner, const Problem& problem, const PlannerContext& context)
{
  SearchResult result;
  result.ranked   = planner.propose(problem, context);
  result.proposed = static_cast<long long>(result.ranked.size());
  for (Candidate& c : result.ranked) // a plan file written from it keeps the sequences it was chosen for
    c.plan.seq_len = problem.workload->seq_len;
  std::sort(result.ranked.begin(), result.ranked.end(), better_candidate);
  // Equal plans have equal scores, so after sorting they are neighbours. Plans that differ only in a placement
  // the cost model cannot tell apart (devices swapped with identical ones) are duplicates too: keep the first.
  auto same = [](const Candidate& a, const Candidate& b) {
    if (a.estimate.iteration_time_s != b.estimate.iteration_time_s || a.fits() != b.fits())
      return false;
    Plan moved      = b.plan;
    moved.placement = a.plan.placement;
    return a.plan == moved;
  };
  result.ranked.erase(std::unique(result.ranked.begin(), result.ranked.end(), same), result.ranked.end());
  if (context.cannot_launch) {
    std::vector<Candidate> launchable;
    for (Candidate& c : result.ranked) {
      std::string why = context.cannot_launch(c.plan);
      if (why.empty()) {
        launchable.push_back(std::move(c));
      } else if (result.unlaunchable++ == 0) {
        result.first_unlaunchable_reason = std::move(why);
      }
    }
    result.ranked = std::move(launchable);
  }
  return result;
}

} // namespace hetsim::strategies
