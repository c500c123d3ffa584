/// AMP (Li et al., NeurIPS 2022), §3.6: enumerate parallelism degrees and micro-batch sizes, place devices
/// node-first (Megatron's heuristic), assign layers to stages by dynamic programming, score with the cost model.
/// Differences from the paper: stage times use the GPU type that runs each stage (AMP averaged the types), a
/// memory model prunes assignments that do not fit (AMP had none; recompute is tried when nothing fits without
/// it), mixture-of-experts models add the expert-parallel degree to the enumeration (the annealing keeps ep 1),
/// and the flag "anneal" adds §6.3's simulated annealing over degrees, micro-batch and placement.

#include "strategies/planners/amp/amp_search.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include "core/error.hpp"

#include <string>

namespace hetsim::strategies {
namespace {

class AmpPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "amp");
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    const auto degrees =
        enumerate_degrees(problem.cluster->device_count(), layer_count, max_tensor_parallel(problem));
    const auto placement                  = node_first_placement(*problem.cluster);
    const costmodel::ComputeModel compute = context.compute_model();

    std::vector<Candidate> candidates;
    long long done = 0;
    for (const Degrees& d : degrees) {
      for (int mbs : micro_batch_sizes(problem.global_batch, d.dp))
        for (int ep : expert_parallel_degrees(d.dp, *problem.workload)) {
          Plan shape = uniform_batch_plan(d, placement, {}, mbs, problem);
          shape.ep   = ep;
          candidates.push_back(best_assignment(std::move(shape), problem, context, compute));
        }
      if (context.progress)
        context.progress("amp: parallelism degrees", ++done, static_cast<long long>(degrees.size()));
    }
    if (candidates.empty())
      fail_no_data_parallel_degree("amp", problem,
                                   " (tp at most " + std::to_string(max_tensor_parallel(problem)) +
                                       ", pp at most " + std::to_string(layer_count) + " layers)");
    if (context.has_flag("anneal"))
      for (Candidate& c : anneal_placements(problem, context, compute))
        candidates.push_back(std::move(c));
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_amp_planner()
{
  return std::make_unique<AmpPlanner>();
}

} // namespace hetsim::strategies
