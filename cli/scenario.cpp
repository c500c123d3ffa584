#include "cli/scenario.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/link_class.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/scale.hpp"
#include "strategies/plan/plan_json.hpp"

namespace hetsim::cli {

void ScenarioOptions::add_to(CLI::App& command)
{
  command.add_option("--cluster", cluster, "cluster JSON file, or preset:NAME (e.g. preset:case5_worldwide_geo)");
  command.add_option("--model", model, "Hugging Face config.json or layer-list JSON, or preset:NAME");
  command.add_option("--plan", plan, "plan JSON file, or preset:NAME");
  command.add_option("--memory-limit-gib", memory_limit_gib, "cap on usable memory per device (default: its own)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--workspace-gib", workspace_gib, "per-device memory for the framework's buffers (default: the plan framework's CUDA context, NCCL buffers and cuBLAS workspace)")
      ->check(CLI::NonNegativeNumber);
}

void resolve_defaults(ScenarioOptions& options)
{
  const int given = !options.cluster.empty() + !options.model.empty() + !options.plan.empty();
  if (given == 3)
    return;
  if (given != 0)
    throw InputError("give --cluster, --model and --plan together, or none of them for the default scenario");
  options.cluster = kDefaultCluster;
  options.model   = kDefaultModel;
  options.plan    = kDefaultPlan;
}

void load_scenario(const ScenarioOptions& options, Scenario& scenario)
{
  scenario.cluster  = load_cluster(options.cluster);
  scenario.workload = models::load_workload(options.model);
  scenario.plan     = strategies::load_plan(options.plan, scenario.cluster, scenario.workload);

  auto& problem              = scenario.problem;
  problem                    = strategies::problem_for_plan(scenario.cluster, scenario.workload, scenario.plan);
  problem.memory_limit_bytes = options.memory_limit_gib * units::kGiB;
  if (options.workspace_gib)
    problem.workspace_bytes = *options.workspace_gib * units::kGiB;
}

void apply_link_calibration(Scenario& scenario, const costmodel::Calibration& calibration)
{
  // Assigned in place: the Problem keeps pointing at scenario.cluster.
  scenario.cluster = costmodel::calibrated_cluster(scenario.cluster, calibration);
}

MeasuredRun load_measured_run(const std::string& cluster, const std::string& model, const std::string& plan,
                              double scale, const costmodel::Calibration* calibration)
{
  ScenarioOptions options;
  options.cluster = cluster;
  options.model   = model;
  options.plan    = plan;
  MeasuredRun run;
  run.scenario = std::make_unique<Scenario>();
  load_scenario(options, *run.scenario);
  if (calibration)
    apply_link_calibration(*run.scenario, *calibration);
  run.schedule = strategies::scale_schedule(strategies::lower(run.scenario->plan, run.scenario->problem, plan), scale);
  return run;
}

} // namespace hetsim::cli
