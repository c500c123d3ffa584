#pragma once
/// Planners that fix the shape and the placement still choose the micro-batch: the one the analytic estimate
/// likes best among those that fit in memory (recomputation is tried only when none fits without it).

#include "strategies/search/plan_space.hpp"
#include "strategies/search/planner.hpp"

#include <string>
#include <vector>

namespace hetsim::strategies {

/// Every micro-batch dividing the replicas' share of the global batch; the best candidate (feasible first, then
/// by estimate). Requires dp to divide the global batch.
Candidate best_micro_batch(const Degrees& degrees, const std::vector<int>& placement,
                           const std::vector<int>& stage_starts, int zero_stage, const Problem& problem,
                           const PlannerContext& context, const std::string& note);

/// A seeded uniformly random permutation of the devices: the "random layout" of the baselines.
std::vector<int> random_placement(int devices, std::uint64_t seed);

} // namespace hetsim::strategies
