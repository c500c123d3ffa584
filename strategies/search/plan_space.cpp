#include "strategies/search/plan_space.hpp"

#include "core/error.hpp"
#include "strategies/plan/plan_json.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace hetsim::strategies {

std::vector<int> divisors(int n)
{
  std::vector<int> small, large;
  for (int d = 1; static_cast<long long>(d) * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d)
        large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<int> expert_parallel_degrees(int dp, const models::Workload& workload)
{
  if (!workload.shape || !workload.shape->mixture_of_experts())
    return {1};
  return divisors(std::gcd(dp, workload.shape->experts));
}

std::vector<int> context_parallel_degrees(const Plan& plan, const models::Workload& workload)
{
  if (!workload.shape || !workload.shape->flash_attention || plan.ep > 1 ||
      runs_deepspeed_engine(plan.framework.name))
    return {};
  std::vector<int> degrees;
  for (int cp : divisors(plan.dp))
    if (cp > 1 && workload.seq_len % (2 * cp * (plan.splits_sequence() ? plan.tp : 1)) == 0)
      degrees.push_back(cp);
  return degrees;
}

std::vector<Recompute> recompute_choices(const models::Workload& workload)
{
  for (const auto& layer : workload.layers)
    if (layer.selective_recompute_flops_per_sample > 0)
      return {Recompute::none, Recompute::selective, Recompute::full};
  return {Recompute::none, Recompute::full};
}


std::string recompute_note(Recompute choice)
{
  return choice == Recompute::full ? "recompute" : choice == Recompute::selective ? "selective recompute" : "";
}

int max_tensor_parallel(const Cluster& cluster)
{
  int g = 0;
  for (const Node& node : cluster.nodes())
    g = std::gcd(g, static_cast<int>(node.devices.size()));
  return g > 0 ? g : 1;
}

int model_tensor_parallel_limit(const Problem& problem)
{
  // Planners' plans leave sequence_parallel to the framework's default.
  return tensor_parallel_limit(*problem.workload, problem.framework.scatter_gather_sends);
}

bool splits_model(const Problem& problem, int tp)
{
  const int limit = model_tensor_parallel_limit(problem);
  return limit == 0 || limit % tp == 0;
}

int max_tensor_parallel(const Problem& problem)
{
  return std::gcd(max_tensor_parallel(*problem.cluster), model_tensor_parallel_limit(problem));
}

std::vector<Degrees> enumerate_degrees(int devices, int layer_count, int max_tp)
{
  std::vector<Degrees> result;
  for (int tp : divisors(max_tp)) {
    if (devices % tp != 0)
      continue;
    for (int pp : divisors(devices / tp))
      if (pp <= layer_count)
        result.push_back({tp, pp, devices / tp / pp});
  }
  return result;
}

std::string batch_excludes_data_parallelism(int devices, long long global_batch)
{
  std::string excluded;
  for (int dp : divisors(devices)) {
    if (dp == 1)
      continue;
    if (global_batch % dp == 0)
      return ""; // some data parallelism is possible
    excluded += (excluded.empty() ? "" : ", ") + std::to_string(dp);
  }
  if (excluded.empty())
    return ""; // one device: nothing to exclude
  const long long nearer = std::max<long long>(devices, (global_batch + devices / 2) / devices * devices);
  return "global batch " + std::to_string(global_batch) + " divides evenly among none of the data-parallel "
         "degrees " + excluded + " that " + std::to_string(devices) + " devices allow: plans that split it evenly "
         "have dp 1 (a global batch of " + std::to_string(nearer) + " allows them)";
}

std::vector<int> micro_batch_sizes(int global_batch, int dp)
{
  if (dp <= 0 || global_batch % dp != 0)
    return {};
  return divisors(global_batch / dp);
}

std::vector<int> node_first_placement(const Cluster& cluster)
{
  std::vector<int> placement;
  for (const Node& node : cluster.nodes())
    placement.insert(placement.end(), node.devices.begin(), node.devices.end());
  return placement;
}

Plan uniform_batch_plan(const Degrees& degrees, std::vector<int> placement, std::vector<int> stage_starts,
                        int micro_batch, const Problem& problem, int cp)
{
  Plan plan;
  plan.tp           = degrees.tp;
  plan.pp           = degrees.pp;
  plan.dp           = degrees.dp;
  plan.cp           = cp;
  plan.placement    = std::move(placement);
  plan.stage_starts = std::move(stage_starts);
  plan.micro_batch.assign(degrees.dp, micro_batch);
  plan.grad_accum.assign(degrees.dp, problem.global_batch / (degrees.dp / cp * micro_batch));
  plan.dtype     = problem.dtype;
  plan.framework = problem.framework;
  return plan;
}

void fail_no_data_parallel_degree(std::string_view planner, const Problem& problem, const std::string& limits)
{
  throw InfeasiblePlan(std::string(planner) + ": global batch " + std::to_string(problem.global_batch) +
                       " (--global-batch) is not divisible by any data-parallel degree of the " +
                       std::to_string(problem.cluster->device_count()) + " devices of cluster '" +
                       problem.cluster->name() + "'" + limits + "; give a multiple of a degree it can use");
}

void require_global_batch(const Problem& problem, const char* planner)
{
  if (problem.global_batch <= 0)
    throw InputError(std::string(planner) + ": expected a positive global batch, got " +
                     std::to_string(problem.global_batch));
}

} // namespace hetsim::strategies
