#include "sweep/run_cell.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "sim/rescore.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/search.hpp"

#include <algorithm>
#include <cstdio>

namespace hetsim::sweep {
namespace {

std::string number(double value)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

} // namespace

SweepInputs load_sweep_inputs(const std::vector<Cell>& cells)
{
  SweepInputs inputs;
  for (const Cell& cell : cells) {
    if (!inputs.clusters.count(cell.cluster_path))
      inputs.clusters[cell.cluster_path] = std::make_unique<Cluster>(load_cluster(cell.cluster_path));
    if (!inputs.models.count(cell.model_path))
      inputs.models[cell.model_path] = std::make_unique<models::Workload>(models::load_workload(cell.model_path));
  }
  return inputs;
}

Row cell_key(const Cell& cell)
{
  return {cell.cluster,
          cell.model,
          cell.planner,
          std::to_string(cell.global_batch),
          cell.zero_stage ? std::to_string(*cell.zero_stage) : "auto",
          cell.pipeline_depth ? std::to_string(*cell.pipeline_depth) : "auto",
          std::to_string(cell.seed)};
}

Row run_cell(const Cell& cell, const SweepSpec& spec, const SweepInputs& inputs)
{
  Row row = cell_key(cell);
  row.resize(sweep_columns().size());
  auto set = [&](std::string_view column, std::string value) {
    const auto& columns = sweep_columns();
    row[std::find(columns.begin(), columns.end(), column) - columns.begin()] = std::move(value);
  };
  strategies::Problem problem;
  problem.cluster      = inputs.clusters.at(cell.cluster_path).get();
  problem.workload     = inputs.models.at(cell.model_path).get();
  problem.global_batch = cell.global_batch;
  try {
    problem.dtype = strategies::choose_dtype(spec.dtype, "sweep spec: dtype", *problem.cluster, *problem.workload);
  } catch (const InputError& e) { // a GPU of this cell's cluster lacks the dtype: the other cells go on
    set("status", "infeasible");
    set("note", e.what());
    return row;
  }
  strategies::PlannerContext context;
  context.seed = cell.seed;
  if (cell.pipeline_depth)
    context.flags.push_back("pp=" + std::to_string(*cell.pipeline_depth));
  try {
    auto ranked = strategies::search(*strategies::find_planner(cell.planner).make(), problem, context)
                      .ranked;
    if (cell.zero_stage) { // the cell's ZeRO stage replaces the planner's, and changes the scores
      for (auto& c : ranked) {
        strategies::Plan plan = c.plan;
        plan.zero_stage       = *cell.zero_stage;
        if (plan.zero_stage > 2) // experts are not sharded by ZeRO-3: one holder per replica
          plan.ep = 1;
        if (plan.zero_stage > 1 && plan.virtual_stages > 1) { // interleaving runs ZeRO 0-1 only: one chunk
          plan.virtual_stages = 1;
          plan.stage_starts   = strategies::uniform_stage_starts(static_cast<int>(problem.workload->layers.size()),
                                                                 plan.pp);
        }
        c                     = strategies::evaluate(std::move(plan), problem, context, c.note);
      }
      std::stable_sort(ranked.begin(), ranked.end(), strategies::better_candidate);
    }
    const auto rescored = sim::rescore(ranked, spec.top, problem, sim::SimOptions{});
    if (rescored.index.empty() && !rescored.too_large.empty()) {
      set("status", "too_large");
      set("note", rescored.too_large.front().second);
      return row;
    }
    if (rescored.index.empty()) {
      set("status", "infeasible");
      set("note", ranked.empty() ? "no candidate" : "no candidate fits in memory (" + ranked.front().note + ")");
      return row;
    }
    // The fastest simulated; on a tie the better-ranked one.
    std::size_t best = 0;
    for (std::size_t k = 1; k < rescored.reports.size(); ++k)
      if (rescored.reports[k].iteration_time_s < rescored.reports[best].iteration_time_s)
        best = k;
    const strategies::Candidate& c = ranked[rescored.index[best]];
    const sim::Report& report      = rescored.reports[best];
    const auto [mb_min, mb_max]    = std::minmax_element(c.plan.micro_batch.begin(), c.plan.micro_batch.end());
    const auto [ga_min, ga_max]    = std::minmax_element(c.plan.grad_accum.begin(), c.plan.grad_accum.end());
    auto range = [](int lo, int hi) { return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi); };
    set("status", "ok");
    set("tp", std::to_string(c.plan.tp));
    set("pp", std::to_string(c.plan.pp));
    set("virtual_stages", std::to_string(c.plan.virtual_stages));
    set("cp", std::to_string(c.plan.cp));
    set("dp", std::to_string(c.plan.replicas()));
    set("micro_batch", range(*mb_min, *mb_max));
    set("grad_accum", range(*ga_min, *ga_max));
    set("plan_zero_stage", std::to_string(c.plan.zero_stage));
    set("recompute", c.plan.selective_recompute ? "selective" : c.plan.recompute ? "1" : "0");
    set("estimate_s", number(c.estimate.iteration_time_s));
    set("simulated_s", number(report.iteration_time_s));
    set("tokens_per_s", number(report.tokens_per_s));
    set("mfu", number(report.mfu));
    set("peak_memory_bytes", std::to_string(units::whole_bytes(c.peak_memory_bytes)));
    set("note", c.note);
  } catch (const InfeasiblePlan& e) {
    set("status", "infeasible");
    set("note", e.what());
  }
  return row;
}

} // namespace hetsim::sweep
