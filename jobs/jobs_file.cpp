#include "jobs/jobs_file.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_input.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/framework.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/search.hpp"

#include <algorithm>
#include <map>

namespace hetsim::jobs {
namespace {

/// `load()`, with its InputError prefixed by `field`'s place in the jobs file: a model or plan a job names
/// is that job's field.
template <class Load>
decltype(auto) named_by(const JsonInput& field, Load load)
{
  try {
    return load();
  } catch (const InputError& e) {
    throw InputError(field.where() + ": " + e.what());
  }
}

/// The nodes a job names (its `nodes` and the nodes of its `regions`), each claimed for it in `owner`.
std::vector<int> job_nodes(const JsonInput& entry, const Cluster& cluster, const std::string& name,
                           std::map<int, std::string>& owner)
{
  std::vector<int> nodes;
  const auto claim = [&](int node, const JsonInput& where) {
    const auto [it, fresh] = owner.emplace(node, name);
    if (!fresh)
      where.fail("a node no other job runs on (node '" + cluster.nodes()[node].name + "' already runs job '" +
                 it->second + "')");
    nodes.push_back(node);
  };
  if (const auto list = entry.find("nodes"))
    for (const JsonInput& item : list->elements())
      claim(cluster_node_index(item, cluster), item);
  if (const auto list = entry.find("regions"))
    for (const JsonInput& item : list->elements())
      for (int node : cluster.regions()[cluster_region_index(item, cluster)].nodes)
        claim(node, item);
  if (nodes.empty())
    entry.fail("`nodes` or `regions` naming where the job runs");
  return nodes;
}

/// The best candidate of the entry's planner on the job's part; fills job.plan, workload and problem.
void plan_by_search(const JsonInput& entry, const models::Workload& given, Job& job)
{
  const JsonInput planner_field = entry.at("planner");
  const auto& info = named_by(planner_field, [&]() -> const strategies::PlannerInfo& {
    return strategies::find_planner(planner_field.string());
  });
  strategies::Problem& problem  = job.problem;
  problem.cluster               = &job.part.cluster;
  const JsonInput batch         = entry.at("global_batch");
  problem.global_batch          = batch.positive_int();
  if (problem.global_batch > strategies::kMaxGlobalBatch)
    batch.fail("a global batch of at most " + std::to_string(strategies::kMaxGlobalBatch) + " sequences");
  problem.dtype = strategies::choose_dtype(entry.string_or("dtype", ""), entry.where() + ".dtype", job.part.cluster,
                                           given);
  strategies::Framework framework = strategies::Framework::megatron;
  if (const auto field = entry.find("framework"); field && !strategies::parse_framework(field->string(), framework))
    field->fail(std::string(strategies::framework_choices()));
  problem.framework = strategies::framework_defaults(framework);
  job.workload      = strategies::run_by(given, problem.framework, problem.dtype);
  problem.workload  = &job.workload;
  const strategies::SearchResult result = strategies::search(*info.make(), problem, strategies::PlannerContext{});
  if (result.ranked.empty() || !result.ranked.front().fits())
    throw InfeasiblePlan(entry.where() + ": planner " + std::string(info.name) + " finds no plan of " +
                         job.workload.name + " that fits the job's " +
                         std::to_string(job.part.cluster.device_count()) + " devices at global batch " +
                         std::to_string(problem.global_batch));
  job.plan        = result.ranked.front().plan;
  job.plan_origin = "planner " + std::string(info.name);
}

std::unique_ptr<Job> load_job(const JsonInput& entry, const std::string& file, const Cluster& cluster,
                              std::map<int, std::string>& owner, bool allow_oom)
{
  entry.allow_only({"name", "nodes", "regions", "model", "plan", "planner", "global_batch", "framework", "dtype",
                    "seq_len"});
  auto job  = std::make_unique<Job>();
  job->name = entry.at("name").name(); // reports and messages print it as it is
  job->part = cluster_part(cluster, job_nodes(entry, cluster, job->name, owner), job->name);
  const bool by_plan = entry.has("plan"), by_planner = entry.has("planner");
  if (by_plan == by_planner)
    entry.fail("either `plan` (a plan file) or `planner` (with `global_batch`), not both");
  const std::string plan_file = by_plan ? input_beside(entry.at("plan").string(), file) : "";
  int seq_len = 0;
  if (const auto field = entry.find("seq_len"))
    seq_len = field->positive_int();
  if (by_plan)
    seq_len = named_by(entry.at("plan"),
                       [&] { return strategies::seq_len_for_plan(plan_file, seq_len, entry.where() + ".seq_len"); });
  const JsonInput model  = entry.at("model");
  models::Workload given = named_by(model, [&] { return models::load_workload(input_beside(model.string(), file)); });
  if (seq_len != 0)
    given = models::with_seq_len(given, seq_len, entry.where() + ".seq_len");

  if (by_plan) {
    for (const char* key : {"global_batch", "framework", "dtype"})
      if (const auto field = entry.find(key))
        field->fail("nothing: a plan file gives its own batch, framework and dtype");
    job->plan_origin = plan_file;
    job->plan        = named_by(entry.at("plan"),
                                [&] { return strategies::load_plan(job->plan_origin, job->part.cluster, given); });
    job->workload    = strategies::run_by(given, job->plan.framework, job->plan.dtype);
    job->problem     = strategies::problem_for_plan(job->part.cluster, job->workload, job->plan);
  } else {
    plan_by_search(entry, given, *job);
  }
  try {
    strategies::check_memory(strategies::plan_memory(job->plan, job->problem));
  } catch (const InfeasiblePlan& e) {
    if (!allow_oom)
      throw InfeasiblePlan(entry.where() + " (job '" + job->name + "'): " + e.what());
  }
  job->schedule = strategies::lower(job->plan, job->problem, job->plan_origin);
  return job;
}

} // namespace

nlohmann::json read_jobs_file(const std::string& file)
{
  return JsonInput::parse_text(read_input_file(file), file);
}

std::vector<std::unique_ptr<Job>> load_jobs(const std::string& file, const Cluster& cluster, bool allow_oom)
{
  return load_jobs(read_jobs_file(file), file, cluster, allow_oom);
}

std::vector<std::unique_ptr<Job>> load_jobs(const nlohmann::json& json, const std::string& file,
                                            const Cluster& cluster, bool allow_oom)
{
  const JsonInput root(json, file);
  root.allow_only({"description", "jobs"});
  const JsonInput list = root.at("jobs");
  if (list.size() == 0 || list.size() > static_cast<std::size_t>(kMaxJobs))
    list.fail("a list of 1 to " + std::to_string(kMaxJobs) + " jobs");
  std::map<int, std::string> owner; // node -> the job that runs on it
  std::vector<std::unique_ptr<Job>> jobs;
  for (const JsonInput& entry : list.elements()) {
    jobs.push_back(load_job(entry, file, cluster, owner, allow_oom));
    for (std::size_t k = 0; k + 1 < jobs.size(); ++k)
      if (jobs[k]->name == jobs.back()->name)
        entry.at("name").fail("a name no other job has");
  }
  return jobs;
}

std::vector<std::string> files_named(const std::string& file)
{
  return files_named(read_jobs_file(file), file);
}

std::vector<std::string> files_named(const nlohmann::json& json, const std::string& file)
{
  std::vector<std::string> files;
  const auto jobs = json.is_object() ? json.find("jobs") : json.end();
  if (jobs == json.end() || !jobs->is_array())
    return files; // load_jobs() names what is wrong
  for (const nlohmann::json& entry : *jobs)
    for (const char* key : {"model", "plan"})
      if (entry.is_object() && entry.contains(key) && entry[key].is_string() &&
          !entry[key].get<std::string>().starts_with("preset:"))
        files.push_back(input_beside(entry[key].get<std::string>(), file));
  return files;
}

std::vector<sim::SharedJob> shared_jobs(const std::vector<std::unique_ptr<Job>>& jobs)
{
  std::vector<sim::SharedJob> shared;
  for (const auto& job : jobs)
    shared.push_back({job->name, &job->plan, &job->problem, &job->schedule, job->part.devices});
  return shared;
}

} // namespace hetsim::jobs
