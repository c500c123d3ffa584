/// The Megatron-LM heuristics as AMP §4.1 summarises them: for every micro-batch size, tensor parallelism no
/// larger than the smallest node, the smallest tp x pp that fits in memory, node-first placement and the same
/// number of layers on every stage. Each pipelined choice also comes interleaved (virtual stages, as
/// Megatron-LM's large published runs use), with the chunk count the estimate likes best among those that fit.
/// For a mixture-of-experts model every expert-parallel degree is tried with each (tp, pp, dp), and the fastest
/// that fits stands for them. Where no plan fits without full recompute (long sequences), the data-parallel
/// ranks are also cut into context-parallel groups, as Megatron-LM's long-context runs do.

#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

namespace hetsim::strategies {
namespace {

/// The best interleaved variant of `base` (2 to 8 chunks per stage, uniform chunks), if one fits.
std::optional<Candidate> interleaved(const Candidate& base, const Problem& problem, const PlannerContext& context)
{
  const Plan& plan      = base.plan;
  const int layer_count = static_cast<int>(problem.workload->layers.size());
  // Megatron-LM's schedule, with ZeRO 0-1; with pp 2 it needs its p2p overlap, which the replay does not model.
  if (plan.pp <= 2 || !plan.interleaves(plan.grad_accum[0]) || plan.zero_stage > 1 ||
      plan.framework.name != Framework::megatron)
    return std::nullopt;
  std::optional<Candidate> best;
  for (int chunks = 2; chunks <= 8 && plan.pp * chunks <= layer_count; ++chunks) {
    Plan variant           = plan;
    variant.virtual_stages = chunks;
    variant.stage_starts   = uniform_stage_starts(layer_count, plan.pp * chunks);
    if (!fits_in_memory(variant, problem)) // kept only when it fits
      continue;
    Candidate c = evaluate(std::move(variant), problem, context,
                           base.note + (base.note.empty() ? "" : ", ") + "interleaved " + std::to_string(chunks));
    if (c.fits() && (!best || c.estimate.iteration_time_s < best->estimate.iteration_time_s))
      best = std::move(c);
  }
  return best;
}

class MegatronPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "megatron");
    const int layer_count = static_cast<int>(problem.workload->layers.size());
    const auto degrees =
        enumerate_degrees(problem.cluster->device_count(), layer_count, max_tensor_parallel(problem));
    const auto placement = node_first_placement(*problem.cluster);

    std::vector<Candidate> candidates;
    for (int mbs : divisors(problem.global_batch)) {
      // All degrees of this micro-batch, by model-parallel size; keep the smallest size where something fits.
      std::vector<Candidate> smallest_fitting, smallest_any;
      int fitting_size = std::numeric_limits<int>::max(), any_size = std::numeric_limits<int>::max();
      for (const Degrees& d : degrees) {
        // In 64 bits: 16,384 devices times a micro-batch of 262,144 wraps an int to 0.
        if (problem.global_batch % (static_cast<long long>(d.dp) * mbs) != 0 || d.tp * d.pp > fitting_size)
          continue;
        // Per expert-parallel degree, recompute (selective before full) only when nothing fits without; the
        // fastest that fits stands
        // for these degrees, else the one with the least memory (the largest ep, recomputing).
        std::optional<Candidate> fitting, closest;
        bool fits_lightly = false; // without full recompute, at cp 1
        auto try_plan     = [&](int ep, int cp) {
          for (Recompute recompute : recompute_choices(*problem.workload)) {
            Plan plan =
                uniform_batch_plan(d, placement, uniform_stage_starts(layer_count, d.pp), mbs, problem, cp);
            plan.ep = ep;
            plan.set_recompute(recompute);
            // One that does not fit counts only as the closest (full recompute): the others need no estimate.
            const bool closest_if_over = recompute == Recompute::full && (!closest || cp == 1);
            if (!closest_if_over && !fits_in_memory(plan, problem))
              continue;
            const std::string split = cp > 1 ? "cp " + std::to_string(cp) : "";
            const std::string note  = recompute_note(recompute);
            Candidate c = evaluate(std::move(plan), problem, context,
                                   split + (!split.empty() && !note.empty() ? ", " : "") + note);
            if (c.fits()) {
              fits_lightly = fits_lightly || (cp == 1 && recompute != Recompute::full);
              if (!fitting || c.estimate.iteration_time_s < fitting->estimate.iteration_time_s)
                fitting = std::move(c);
              return;
            }
            if (recompute == Recompute::full && (!closest || cp == 1))
              closest = std::move(c);
          }
        };
        for (int ep : expert_parallel_degrees(d.dp, *problem.workload))
          try_plan(ep, 1);
        if (!fits_lightly) {
          const Plan shape = uniform_batch_plan(d, placement, uniform_stage_starts(layer_count, d.pp), mbs, problem);
          for (int cp : context_parallel_degrees(shape, *problem.workload))
            try_plan(1, cp);
        }
        if (fitting) {
          if (d.tp * d.pp < fitting_size)
            smallest_fitting.clear();
          fitting_size = d.tp * d.pp;
          smallest_fitting.push_back(std::move(*fitting));
        } else if (closest && d.tp * d.pp <= any_size) {
          if (d.tp * d.pp < any_size)
            smallest_any.clear();
          any_size = d.tp * d.pp;
          smallest_any.push_back(std::move(*closest));
        }
      }
      auto& chosen = smallest_fitting.empty() ? smallest_any : smallest_fitting;
      for (Candidate& c : chosen) {
        if (c.fits())
          if (auto variant = interleaved(c, problem, context))
            candidates.push_back(std::move(*variant));
        candidates.push_back(std::move(c));
      }
    }
    if (candidates.empty())
      fail_no_data_parallel_degree("megatron", problem);
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_megatron_planner()
{
  return std::make_unique<MegatronPlanner>();
}

} // namespace hetsim::strategies
