/// The decentralized-training scheduler (`--planner dtfm`): for every pipeline depth pp dividing the device count
/// (tp = 1, dp = devices / pp, uniform stages), the micro-batch the estimate prefers, then a hybrid genetic
/// search over which devices form each stage's data-parallel group; stages are ordered by the open-loop TSP and
/// replicas follow the bottleneck matchings. `dtfm-kl` swaps in the Kernighan-Lin local search, `dtfm-random`
/// skips the scheduler (a random layout, as in the paper's ablation).

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/dtfm/dtfm_genetic.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/micro_batch_choice.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>

namespace hetsim::strategies {
namespace {

enum class Mode { scheduler, kernighan_lin, random };

/// c_dp and c_pp of §2 for a plan shape: the largest stage's gradients, and the activations one replica sends
/// over its busiest stage boundary in one iteration (every micro-batch, forward; gradients come back as many).
TaskletVolumes volumes_of(const Plan& plan, const Problem& problem)
{
  const auto& layers = problem.workload->layers;
  const int count    = static_cast<int>(layers.size());
  const double bytes = dtype_bytes(plan.dtype);
  TaskletVolumes v;
  for (int s = 0; s < plan.pp; ++s) {
    double params = 0;
    for (int l = plan.stage_starts[s]; l < plan.stage_end(s, count); ++l)
      params += layers[l].params;
    v.data_parallel_bytes = std::max(v.data_parallel_bytes, params * bytes);
    if (s + 1 < plan.pp) {
      const double sequences = static_cast<double>(plan.micro_batch[0]) * plan.grad_accum[0];
      const double boundary  = layers[plan.stage_end(s, count) - 1].activation_bytes_per_sample * bytes / 2;
      v.pipeline_bytes       = std::max(v.pipeline_bytes, boundary * sequences);
    }
  }
  return v;
}

std::string cost_note(const char* what, const AssignmentCost& c)
{
  char text[128];
  std::snprintf(text, sizeof text, "%s: comm cost %.3g s (data-parallel %.3g, pipeline %.3g)", what, c.total_s(),
                c.data_parallel_s, c.pipeline_s);
  return text;
}

class DtfmPlanner final : public Planner {
public:
  static constexpr int kKept = 3; ///< distinct assignments per shape handed to the ranking

  explicit DtfmPlanner(Mode mode) : mode_(mode) {}

  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, name());
    const int devices     = problem.cluster->device_count();
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    const CommGraph graph = comm_graph(*problem.cluster);
    std::vector<int> identity(devices);
    std::iota(identity.begin(), identity.end(), 0);

    // "pp=N" (a sweep parameter) fixes the pipeline depth, so that the ablations compare layouts of one shape.
    int only_pp = 0;
    for (const std::string& flag : context.flags)
      if (flag.starts_with("pp="))
        only_pp = std::atoi(flag.c_str() + 3);
    std::vector<Candidate> candidates;
    for (int pp : divisors(devices)) {
      const Degrees d{1, pp, devices / pp};
      if ((only_pp > 0 && pp != only_pp) || pp > layer_count || micro_batch_sizes(problem.global_batch, d.dp).empty())
        continue;
      const auto starts = uniform_stage_starts(layer_count, pp);
      // The micro-batch hardly depends on the layout; choose it once per shape on the identity layout.
      Candidate shape = best_micro_batch(d, identity, starts, 0, problem, context, name());
      const TaskletVolumes volumes = volumes_of(shape.plan, problem);
      const DtfmCost cost(graph, pp, d.dp, volumes);
      const DtfmCost exact(graph, pp, d.dp, volumes, true); // the final word on the stage order
      auto with_placement = [&](std::vector<int> placement, const std::string& note) {
        Plan plan      = shape.plan;
        plan.placement = std::move(placement);
        candidates.push_back(evaluate(std::move(plan), problem, context, note));
      };
      if (mode_ == Mode::random) {
        const std::vector<int> placement = random_placement(devices, context.seed);
        with_placement(placement, "random layout");
        continue;
      }
      if (!shape.fits()) { // nothing of this depth fits: report it without spending a search on it
        candidates.push_back(std::move(shape));
        continue;
      }
      GeneticOptions options;
      options.seed         = context.seed * 1000003 + static_cast<std::uint64_t>(pp);
      options.local_search = mode_ == Mode::scheduler ? LocalSearch::dtfm : LocalSearch::kernighan_lin;
      // A local search pass tries every pair of groups: keep deep pipelines' searches near the 8-stage budget.
      if (pp > 8)
        options.generations = std::max(20, options.generations * 64 / (pp * pp));
      const GeneticResult found = genetic_search(cost, options, context.progress);
      for (int k = 0; k < kKept && k < static_cast<int>(found.population.size()); ++k)
        with_placement(assignment_placement(exact, found.population[k]),
                       cost_note(name(), exact.cost(found.population[k])));
    }
    if (candidates.empty())
      fail_no_data_parallel_degree(name(), problem, only_pp > 0 ? " with " + std::to_string(only_pp) + " stages" : "");
    return candidates;
  }

private:
  const char* name() const
  {
    return mode_ == Mode::scheduler ? "dtfm" : mode_ == Mode::kernighan_lin ? "dtfm-kl" : "dtfm-random";
  }

  Mode mode_;
};

} // namespace

std::unique_ptr<Planner> make_dtfm_planner() { return std::make_unique<DtfmPlanner>(Mode::scheduler); }
std::unique_ptr<Planner> make_dtfm_kl_planner() { return std::make_unique<DtfmPlanner>(Mode::kernighan_lin); }
std::unique_ptr<Planner> make_dtfm_random_planner() { return std::make_unique<DtfmPlanner>(Mode::random); }

} // namespace hetsim::strategies
