#include "strategies/search/planner.hpp"

#include "core/error.hpp"
#include "strategies/profiling/device_profiles.hpp"

#include <algorithm>
#include <tuple>

namespace hetsim::strategies {

bool PlannerContext::has_flag(std::string_view flag) const
{
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

costmodel::ComputeModel PlannerContext::compute_model() const
{
  if (!shared_model || shared_model_inputs != std::pair{calibration, profile}) {
    shared_model        = std::make_shared<const costmodel::ComputeModel>(calibration, profile);
    shared_model_inputs = {calibration, profile};
  }
  return *shared_model;
}

std::unique_ptr<Profiler> PlannerContext::make_profiler(const Problem& problem) const
{
  if (device_profiles) {
    if (device_profiles->dtype != problem.dtype) // step times and memory differ with the dtype
      throw InputError(device_profiles->origin + ": dtype: expected " + std::string(dtype_name(problem.dtype)) +
                       ", the dtype being planned (profile again with --dtype " +
                       std::string(dtype_name(problem.dtype)) + "), got " +
                       std::string(dtype_name(device_profiles->dtype)));
    return std::make_unique<RecordedProfiler>(*problem.cluster, *device_profiles);
  }
  return std::make_unique<CostModelProfiler>(problem, compute_model());
}

Candidate evaluate(Plan plan, const Problem& problem, const PlannerContext& context, std::string note)
{
  plan.collective_algorithm = problem.collective_algorithm;
  Candidate candidate;
  candidate.estimate = estimate(plan, problem, context.compute_model());
  const auto memory  = plan_memory(plan, problem);
  for (const DeviceMemory& m : memory)
    candidate.peak_memory_bytes = std::max(candidate.peak_memory_bytes, m.total_bytes());
  if (const DeviceMemory* worst = largest_overflow(memory))
    candidate.memory_overflow = MemoryOverflow{worst->device, worst->gpu, worst->total_bytes(), worst->capacity_bytes};
  candidate.plan = std::move(plan);
  candidate.note = std::move(note);
  return candidate;
}

bool fits_in_memory(Plan plan, const Problem& problem)
{
  plan.collective_algorithm = problem.collective_algorithm; // as evaluate() scores it
  return largest_overflow(plan_memory(plan, problem)) == nullptr;
}

bool better_candidate(const Candidate& a, const Candidate& b)
{
  if (a.fits() != b.fits())
    return a.fits();
  if (a.estimate.iteration_time_s != b.estimate.iteration_time_s)
    return a.estimate.iteration_time_s < b.estimate.iteration_time_s;
  const Plan& p = a.plan;
  const Plan& q = b.plan;
  return std::tie(p.tp, p.pp, p.dp, p.micro_batch, p.grad_accum, p.stage_starts, p.placement, p.zero_stage,
                  p.recompute) < std::tie(q.tp, q.pp, q.dp, q.micro_batch, q.grad_accum, q.stage_starts, q.placement,
                                          q.zero_stage, q.recompute);
}

} // namespace hetsim::strategies
