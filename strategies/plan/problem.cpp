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

Dtype choose_dtype(const std::string& given, const std::string& option, const Cluster& cluster,
                   const models::Workload& workload)
{
  Dtype dtype = workload.default_dtype();
  if (!given.empty() && !parse_dtype(given, dtype))
    throw InputError(option + ": expected \"fp16\", \"bf16\" or \"fp32\", got " + quote(given));
  if (int device = first_device_lacking(cluster, dtype); device >= 0) {
    if (given.empty()) // only a model's torch_dtype can name a dtype some GPU lacks
      throw InputError((workload.dtype_origin.empty() ? "model " + quote(workload.name) : workload.dtype_origin) +
                       ": " + dtype_refusal(cluster, device, dtype) + " (" + option + " overrides the model's dtype)");
    throw InputError(option + ": " + dtype_refusal(cluster, device, dtype));
  }
  return dtype;
}

} // namespace hetsim::strategies
