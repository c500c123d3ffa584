#pragma once
/// The two search steps of the amp planner, exposed for the simulated annealing and for tests.

#include "costmodel/compute.hpp"
#include "strategies/search/planner.hpp"

#include <vector>

namespace hetsim::strategies {

/// Completes `shape` (everything but stage_starts) with the optimal layer assignment and scores it. When no
/// assignment fits, tries again with recompute; when that fails too, returns uniform stages marked as overflowing.
Candidate best_assignment(Plan shape, const Problem& problem, const PlannerContext& context,
                          const costmodel::ComputeModel& compute);

/// AMP §6.3: simulated annealing whose neighbours change tp or dp (and then the micro-batch and the placement:
/// a domino tiling of the node x device mesh, each domino one stage of tp x dp devices). Returns every accepted
/// state. Deterministic for a given context seed.
std::vector<Candidate> anneal_placements(const Problem& problem, const PlannerContext& context,
                                         const costmodel::ComputeModel& compute, int iterations = 400);

} // namespace hetsim::strategies
