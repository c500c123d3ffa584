#include "sweep/run_cell.hpp"

#include "core/cluster_json.hpp"
#include "core/cluster_part.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "sim/simulate/rescore.hpp"
#include "sim/simulate/shared_jobs.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/search.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace hetsim::sweep {
namespace {

std::string number(double value)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

/// The nodes of `cluster` that none of `beside` runs on.
std::vector<int> nodes_left(const Cluster& cluster, const std::vector<std::unique_ptr<jobs::Job>>& beside)
{
  std::vector<char> taken(cluster.nodes().size(), 0);
  for (const auto& job : beside)
    for (int node : job->part.nodes)
      taken[node] = 1;
  std::vector<int> left;
  for (std::size_t n = 0; n < taken.size(); ++n)
    if (!taken[n])
      left.push_back(static_cast<int>(n));
  return left;
}

/// The cell's job beside the others, replayed together.
struct BesideRun {
  int candidate = -1;           ///< index into the rescored candidates
  sim::Report together;         ///< the cell's job
  double slowdown        = 0;   ///< the cell's job: together / alone
  double beside_slowdown = 0;   ///< the most any job beside is slowed
};

/// Each rescored candidate replayed with the jobs beside; the fastest together.
BesideRun best_beside(const std::vector<strategies::Candidate>& ranked, const sim::Rescored& rescored,
                      const strategies::Problem& problem, const ClusterPart& part, const Cluster& cluster,
                      const std::vector<std::unique_ptr<jobs::Job>>& beside)
{
  BesideRun best;
  for (std::size_t k = 0; k < rescored.index.size(); ++k) {
    const strategies::Plan& plan = ranked[rescored.index[k]].plan;
    strategies::Schedule schedule;
    try { // unfolded, which a plan that replays folded may not fit
      schedule = strategies::lower(plan, problem);
    } catch (const strategies::TooManyTasks&) {
      continue;
    }
    std::vector<sim::SharedJob> together = {{"cell", &plan, &problem, &schedule, part.devices}};
    for (const sim::SharedJob& other : jobs::shared_jobs(beside))
      together.push_back(other);
    const sim::SharedRun run = sim::simulate_shared(cluster, together, sim::SimOptions{});
    if (best.candidate >= 0 && run.together[0].iteration_time_s >= best.together.iteration_time_s)
      continue;
    best.candidate = static_cast<int>(k);
    best.together  = run.together[0];
    best.slowdown  = run.slowdown(0);
    best.beside_slowdown = 0;
    for (std::size_t j = 1; j < together.size(); ++j)
      best.beside_slowdown = std::max(best.beside_slowdown, run.slowdown(j));
  }
  return best;
}

} // namespace

std::string beside_key(const Cell& cell) { return cell.cluster_path + '\x1f' + cell.beside_path; }

SweepInputs load_sweep_inputs(const std::vector<Cell>& cells)
{
  SweepInputs inputs;
  for (const Cell& cell : cells) {
    if (!inputs.clusters.count(cell.cluster_path))
      inputs.clusters[cell.cluster_path] = std::make_unique<Cluster>(load_cluster(cell.cluster_path));
    if (!inputs.models.count(cell.model_path))
      inputs.models[cell.model_path] = std::make_unique<models::Workload>(models::load_workload(cell.model_path));
    if (!cell.beside_path.empty() && !inputs.beside.count(beside_key(cell)))
      inputs.beside[beside_key(cell)] = jobs::load_jobs(cell.beside_path, *inputs.clusters.at(cell.cluster_path));
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
          std::to_string(cell.seed),
          cell.beside};
}

Row run_cell(const Cell& cell, const SweepSpec& spec, const SweepInputs& inputs)
{
  Row row = cell_key(cell);
  row.resize(sweep_columns().size());
  auto set = [&](std::string_view column, std::string value) {
    const auto& columns = sweep_columns();
    row[std::find(columns.begin(), columns.end(), column) - columns.begin()] = std::move(value);
  };
  const Cluster& cluster = *inputs.clusters.at(cell.cluster_path);
  const std::vector<std::unique_ptr<jobs::Job>>* beside =
      cell.beside_path.empty() ? nullptr : &inputs.beside.at(beside_key(cell));
  std::optional<ClusterPart> part; // the nodes the jobs beside leave
  if (beside) {
    const std::vector<int> left = nodes_left(cluster, *beside);
    if (left.empty()) {
      set("status", "infeasible");
      set("note", "the jobs of " + cell.beside + " take every node of " + cluster.name());
      return row;
    }
    part.emplace(cluster_part(cluster, left, cluster.name()));
  }
  strategies::Problem problem;
  problem.cluster      = part ? &part->cluster : &cluster;
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
    // The fastest simulated (beside the other jobs when there are); on a tie the better-ranked one.
    std::size_t best = 0;
    for (std::size_t k = 1; k < rescored.reports.size(); ++k)
      if (rescored.reports[k].iteration_time_s < rescored.reports[best].iteration_time_s)
        best = k;
    std::optional<BesideRun> shared;
    if (beside) {
      shared = best_beside(ranked, rescored, problem, *part, cluster, *beside);
      if (shared->candidate < 0) {
        set("status", "too_large");
        set("note", "no rescored candidate lowers unfolded, as a replay beside other jobs needs");
        return row;
      }
      best = static_cast<std::size_t>(shared->candidate);
      set("slowdown", number(shared->slowdown));
      set("beside_slowdown", number(shared->beside_slowdown));
    }
    const strategies::Candidate& c = ranked[rescored.index[best]];
    const sim::Report& report      = shared ? shared->together : rescored.reports[best];
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
