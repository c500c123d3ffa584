/// Random search (AMP §4.3's "RS"): uniformly random valid plans: degrees (tp within a node), micro-batch,
/// placement (a random permutation of the devices) and stage boundaries, from the context's seed.

#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"
#include "strategies/search/seeded_random.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <random>
#include <string>

namespace hetsim::strategies {
namespace {

class RandomPlanner final : public Planner {
public:
  static constexpr int kSamples = 50; ///< as many as AMP's random search

  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "random");
    const int devices     = problem.cluster->device_count();
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    std::vector<Degrees> degrees;
    for (const Degrees& d : enumerate_degrees(devices, layer_count, max_tensor_parallel(problem)))
      if (!micro_batch_sizes(problem.global_batch, d.dp).empty())
        degrees.push_back(d);
    if (degrees.empty())
      fail_no_data_parallel_degree("random", problem);

    std::mt19937_64 rng(context.seed);
    std::vector<Candidate> candidates;
    for (int i = 0; i < kSamples; ++i) {
      const Degrees d  = degrees[pick(rng, static_cast<int>(degrees.size()))];
      const auto sizes = micro_batch_sizes(problem.global_batch, d.dp);
      const int mbs    = sizes[pick(rng, static_cast<int>(sizes.size()))];
      std::vector<int> placement(devices);
      for (int k = 0; k < devices; ++k)
        placement[k] = k;
      shuffle(placement, rng);
      // pp - 1 distinct cut points among layers 1 .. layer_count - 1.
      std::vector<int> cuts(layer_count - 1);
      for (int k = 0; k < layer_count - 1; ++k)
        cuts[k] = k + 1;
      for (int k = 0; k < d.pp - 1; ++k)
        std::swap(cuts[k], cuts[k + pick(rng, layer_count - 1 - k)]);
      std::vector<int> starts{0};
      starts.insert(starts.end(), cuts.begin(), cuts.begin() + (d.pp - 1));
      std::sort(starts.begin(), starts.end());
      candidates.push_back(evaluate(uniform_batch_plan(d, std::move(placement), std::move(starts), mbs, problem),
                                    problem, context, "random sample " + std::to_string(i)));
    }
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_random_planner()
{
  return std::make_unique<RandomPlanner>();
}

} // namespace hetsim::strategies
