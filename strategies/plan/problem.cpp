#include "strategies/plan/problem.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::strategies {

double Problem::memory_capacity(int device) const
{
  HETSIM_ASSERT(cluster != nullptr);
  const double physical = cluster->gpu_of(device).memory_bytes;
  return memory_limit_bytes > 0 ? std::min(memory_limit_bytes, physical) : physical;
}

Problem problem_for_plan(const Cluster& cluster, const models::Workload& workload, const Plan& plan)
{
  Problem problem;
  problem.cluster      = &cluster;
  problem.workload     = &workload;
  problem.global_batch = static_cast<int>(plan.global_batch());
  problem.dtype        = plan.dtype;
  return problem;
}

} // namespace hetsim::strategies
