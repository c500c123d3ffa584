#include "strategies/poplar.hpp"

#include "costmodel/collective.hpp"
#include "strategies/plan_space.hpp"
#include "strategies/planners.hpp"

#include <numeric>

namespace hetsim::strategies {

double zero_micro_step_seconds(const Problem& problem, int zero_stage)
{
  if (zero_stage < 2)
    return 0;
  using costmodel::CollectiveOp;
  const Cluster& cluster = *problem.cluster;
  std::vector<int> all(cluster.device_count());
  std::iota(all.begin(), all.end(), 0);
  const double bytes = problem.workload->total_params() * dtype_bytes(problem.dtype);
  auto seconds       = [&](CollectiveOp op) {
    return costmodel::collective_seconds(cluster, all, op, costmodel::Algorithm::ring, bytes);
  };
  return seconds(CollectiveOp::reduce_scatter) + (zero_stage == 3 ? 2 * seconds(CollectiveOp::all_gather) : 0);
}

PoplarResult plan_poplar(const Problem& problem, Profiler& profiler, int zero_stage)
{
  PoplarResult result;
  result.profile = profile_cluster(problem, profiler, zero_stage);
  std::vector<SpeedCurve> curves;
  curves.reserve(result.profile.profiles.size());
  for (const DeviceProfile& profile : result.profile.profiles)
    curves.emplace_back(profile);
  std::vector<const SpeedCurve*> devices;
  for (int type : result.profile.type_of_device)
    devices.push_back(&curves[type]);

  const int stage   = result.profile.zero_stage;
  result.allocation = stage <= 1 ? allocate_by_peak_speed(devices, problem.global_batch)
                                 : allocate_by_step_time(devices, problem.global_batch,
                                                         zero_micro_step_seconds(problem, stage));
  result.plan = per_device_plan(problem, result.allocation.devices, stage);
  return result;
}

namespace {

class PoplarPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "poplar");
    CostModelProfiler profiler(problem, context.compute_model());
    std::vector<Candidate> candidates;
    for (int stage : requested_zero_stages(context, "poplar")) {
      PoplarResult result = plan_poplar(problem, profiler, stage);
      if (result.profile.zero_stage <= 1) {
        // Also the ZeRO-2/3 branch's split, with every device on the same micro-steps: where the gradient
        // reduction cannot hide behind a short last backward it may win; the ranking decides.
        std::vector<SpeedCurve> curves(result.profile.profiles.begin(), result.profile.profiles.end());
        std::vector<const SpeedCurve*> devices;
        for (int type : result.profile.type_of_device)
          devices.push_back(&curves[type]);
        const BatchAllocation lockstep = allocate_by_step_time(devices, problem.global_batch, 0);
        candidates.push_back(evaluate(per_device_plan(problem, lockstep.devices, result.profile.zero_stage), problem,
                                      context, result.profile.note + ", lockstep"));
      }
      candidates.push_back(evaluate(std::move(result.plan), problem, context, result.profile.note));
    }
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_poplar_planner() { return std::make_unique<PoplarPlanner>(); }

} // namespace hetsim::strategies
