#include "strategies/search/micro_batch_choice.hpp"

#include "core/error.hpp"
#include "strategies/search/seeded_random.hpp"

#include <numeric>
#include <random>

namespace hetsim::strategies {

Candidate best_micro_batch(const Degrees& degrees, const std::vector<int>& placement,
                           const std::vector<int>& stage_starts, int zero_stage, const Problem& problem,
                           const PlannerContext& context, const std::string& note)
{
  const auto sizes = micro_batch_sizes(problem.global_batch, degrees.dp);
  HETSIM_ASSERT(!sizes.empty());
  std::optional<Candidate> best;
  for (Recompute recompute : recompute_choices(*problem.workload)) {
    for (int mbs : sizes) {
      Plan plan       = uniform_batch_plan(degrees, placement, stage_starts, mbs, problem);
      plan.zero_stage = zero_stage;
      plan.set_recompute(recompute);
      Candidate c = evaluate(std::move(plan), problem, context,
                             recompute == Recompute::none ? note : note + "; " + recompute_note(recompute));
      if (!best || better_candidate(c, *best))
        best = std::move(c);
    }
    if (best->fits())
      break;
  }
  return std::move(*best);
}

std::vector<int> random_placement(int devices, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::vector<int> placement(devices);
  std::iota(placement.begin(), placement.end(), 0);
  shuffle(placement, rng);
  return placement;
}

} // namespace hetsim::strategies
