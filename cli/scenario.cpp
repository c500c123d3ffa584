#include "cli/scenario.hpp"

#include "core/byte_size.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/attention_speed.hpp"
#include "costmodel/link_class.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/scale.hpp"
#include "strategies/plan/framework.hpp"
#include "strategies/plan/plan_json.hpp"

#include <iostream>
#include <set>

namespace hetsim::cli {

void ScenarioOptions::add_to(CLI::App& command)
{
  command.add_option("--cluster", cluster, "cluster JSON file, or preset:NAME (e.g. preset:case5_worldwide_geo)");
  command.add_option("--model", model, "Hugging Face config.json or layer-list JSON, or preset:NAME");
  command.add_option("--plan", plan, "plan JSON file, or preset:NAME");
  add_memory_options(command, memory_limit, workspace);
  add_seq_len_option(command, seq_len);
}

void add_seq_len_option(CLI::App& command, int& seq_len)
{
  command.add_option("--seq-len", seq_len,
                     "tokens per sequence to train at (default: the model file's seq_len, else its maximum "
                     "positions, which is said on stderr)");
}

models::Workload apply_framework(const std::string& name, bool autocast, const models::Workload& given,
                                 strategies::Problem& problem)
{
  strategies::Framework framework = strategies::Framework::megatron;
  if (!strategies::parse_framework(name, framework))
    throw InputError("--framework: expected " + std::string(strategies::framework_choices()) + ", got '" + name + "'");
  problem.framework = strategies::framework_defaults(framework);
  if (autocast && !problem.framework.eager_modules)
    throw InputError("--autocast: needs a framework that runs Hugging Face's modules (fsdp or deepspeed); " + name +
                     "'s modules run in 16-bit, not under torch.autocast");
  problem.framework.autocast = autocast;
  return strategies::run_by(given, problem.framework, problem.dtype);
}

void add_autocast_flag(CLI::App& command, bool& autocast)
{
  command.add_flag("--autocast", autocast,
                   "fp32 weights with 16-bit products under torch.autocast, as a plain PyTorch loop trains; "
                   "otherwise the model runs in the dtype with an fp32 master copy (FSDP's MixedPrecision)");
}

models::Workload load_model(const std::string& file, int seq_len)
{
  models::Workload workload = models::load_workload(file);
  if (seq_len != 0)
    workload = models::with_seq_len(workload, seq_len, "--seq-len");
  for (const std::string& line : workload.assumptions)
    std::cerr << "hetsim: note: " << line << '\n';
  return workload;
}

void add_memory_options(CLI::App& command, std::string& memory_limit, std::string& workspace)
{
  command.add_option("--memory-limit", memory_limit,
                     "usable memory per device, with a unit (e.g. 30GiB, 16GB); default: each device's own");
  command.add_option("--workspace", workspace,
                     "per-device memory for the framework's buffers, with a unit (e.g. 2GiB); default: the plan "
                     "framework's CUDA context, NCCL buffers and cuBLAS workspace");
}

void apply_memory_options(const std::string& memory_limit, const std::string& workspace,
                          strategies::Problem& problem)
{
  if (!memory_limit.empty())
    problem.memory_limit_bytes = parse_byte_size(memory_limit, "--memory-limit");
  if (!workspace.empty())
    problem.workspace_bytes = parse_byte_size(workspace, "--workspace", true);
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
  scenario.workload = load_model(options.model, strategies::seq_len_for_plan(options.plan, options.seq_len));
  scenario.plan     = strategies::load_plan(options.plan, scenario.cluster, scenario.workload);
  scenario.workload = strategies::run_by(scenario.workload, scenario.plan.framework, scenario.plan.dtype);

  auto& problem              = scenario.problem;
  problem                    = strategies::problem_for_plan(scenario.cluster, scenario.workload, scenario.plan);
  apply_memory_options(options.memory_limit, options.workspace, problem);
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

std::vector<std::string> calibration_confidence(const costmodel::Calibration& calibration,
                                                const strategies::Plan& plan, const Cluster& cluster,
                                                const models::Workload& workload)
{
  std::vector<std::string> lines;
  std::set<std::string> seen;
  for (int s = 0; s < plan.pp; ++s)
    for (int r = 0; r < plan.dp && r < static_cast<int>(plan.micro_batch.size()); ++r) {
      const std::string& gpu = cluster.gpu_of(plan.device(s, r, 0)).name;
      const double tokens    = static_cast<double>(plan.micro_batch[r]) * workload.seq_len / plan.cp;
      if (!seen.insert(gpu + "@" + std::to_string(tokens)).second)
        continue;
      for (std::string& line : costmodel::calibration_confidence(calibration, gpu, tokens))
        lines.push_back(std::move(line));
    }
  return lines;
}

void print_calibration_confidence(const std::vector<std::string>& lines)
{
  for (const std::string& line : lines)
    std::cout << "calibration: " << line << '\n';
}

std::vector<std::string> report_calibration_match(const costmodel::Calibration& calibration, const std::string& file,
                                                  const Cluster& cluster)
{
  std::set<std::string> fitted;
  for (const auto& [gpu, constants] : calibration.kernels)
    fitted.insert(gpu);
  for (const auto& [gpu, points] : calibration.efficiency_points)
    fitted.insert(gpu);
  std::vector<std::string> matched, unmatched;
  for (const GpuSpec& gpu : cluster.gpus())
    (fitted.count(gpu.name) ? matched : unmatched).push_back(gpu.name);
  auto joined = [](const auto& names) {
    std::string text;
    for (const std::string& name : names)
      text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  if (fitted.empty())
    return matched;
  if (matched.empty())
    std::cerr << "warning: calibration " << file << " fits " << joined(fitted) << ", none of this cluster's GPUs ("
              << joined(unmatched) << "): their compute is priced uncalibrated (its link classes still apply)\n";
  else if (!unmatched.empty())
    std::cout << "calibration: " << file << " fits " << joined(matched) << "; " << joined(unmatched)
              << " priced uncalibrated\n";
  return matched;
}

void print_attention_notes(const models::Workload& workload, const Cluster& cluster)
{
  for (const std::string& line : costmodel::attention_notes(workload, cluster))
    std::cerr << "hetsim: note: " << line << '\n';
}

} // namespace hetsim::cli
