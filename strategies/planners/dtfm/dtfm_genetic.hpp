#pragma once
/// Searching tasklet assignments (§3.4): a hybrid genetic algorithm over balanced partitions of the devices into
/// data-parallel groups, each offspring refined by a local search. Seeded and deterministic.

#include "strategies/planners/dtfm/dtfm_cost.hpp"
#include "strategies/search/planner.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace hetsim::strategies {

enum class LocalSearch {
  dtfm,          ///< the paper's: swap candidates from the fastest link inside each group, its gain function
  kernighan_lin, ///< the classic Kernighan-Lin pair gain on the data-parallel weights
  none,          ///< crossover only
};

struct GeneticOptions {
  int population         = 24;
  int generations        = 150;
  LocalSearch local_search = LocalSearch::dtfm;
  std::uint64_t seed     = 1;
};

struct GeneticResult {
  std::vector<Assignment> population; ///< final population, cheapest first
  std::vector<AssignmentCost> costs;  ///< same order
  double initial_best_s = 0;          ///< cheapest total of the starting (random) population
  long long evaluations = 0;          ///< full cost evaluations, for benchmarks and progress
};

/// A uniformly random balanced partition (a random permutation of the devices).
Assignment random_assignment(int devices, std::mt19937_64& rng);

/// Improves `assignment` in place with one local search until no accepted swap remains; a swap is kept only
/// when it lowers the total cost, so the result is never worse. Returns its cost.
AssignmentCost local_search(const DtfmCost& cost, Assignment& assignment, LocalSearch kind,
                            long long* evaluations = nullptr);

/// The hybrid genetic algorithm: a random starting population, then per generation two parents, a crossover
/// (Kang and Moon: groups of the second parent relabelled to overlap the first, each device inherited from
/// either, then rebalanced), the local search, and the offspring replacing the worst member when it is cheaper.
/// The best member never gets worse than the starting population's best.
GeneticResult genetic_search(const DtfmCost& cost, const GeneticOptions& options, const ProgressFn& progress = {});

} // namespace hetsim::strategies
