#include "strategies/planners/poplar/poplar.hpp"

#include "costmodel/collective.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

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

namespace {

/// Each device's speed curve, pointing into `curves` (one per GPU type).
std::vector<const SpeedCurve*> device_curves(const ClusterProfile& profile, std::vector<SpeedCurve>& curves)
{
  curves.clear();
  curves.reserve(profile.profiles.size()); // the pointers below must stay valid
  for (const DeviceProfile& type : profile.profiles)
    curves.emplace_back(type);
  std::vector<const SpeedCurve*> devices;
  for (int type : profile.type_of_device)
    devices.push_back(&curves[type]);
  return devices;
}

} // namespace

PoplarResult plan_poplar(const Problem& problem, Profiler& profiler, int zero_stage)
{
  PoplarResult result;
  result.profile = profile_cluster(problem, profiler, zero_stage);
  std::vector<SpeedCurve> curves;
  const auto devices = device_curves(result.profile, curves);

  const int stage   = result.profile.setting.zero_stage;
  result.allocation = stage <= 1 ? allocate_by_peak_speed(devices, problem.global_batch)
                                 : allocate_by_step_time(devices, problem.global_batch,
                                                         zero_micro_step_seconds(problem, stage));
  result.plan = per_device_plan(problem, result.allocation.devices, result.profile.setting);
  return result;
}

namespace {

class PoplarPlanner final : public Planner {
public:
  static constexpr int kSweepCandidates = 4;

  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "poplar");
    const auto profiler = context.make_profiler(problem);
    std::vector<Candidate> candidates;
    for (int stage : requested_zero_stages(context, "poplar")) {
      PoplarResult result = plan_poplar(problem, *profiler, stage);
      std::vector<SpeedCurve> curves;
      const auto devices = device_curves(result.profile, curves);
      const ProfileSetting setting = result.profile.setting;
      const int zero               = setting.zero_stage;
      if (zero <= 1) {
        // Also the ZeRO-2/3 branch's split, with every device on the same micro-steps: where the gradient
        // reduction cannot hide behind a short last backward it may win; the ranking decides.
        const BatchAllocation lockstep = allocate_by_step_time(devices, problem.global_batch, 0);
        candidates.push_back(evaluate(per_device_plan(problem, lockstep.devices, setting), problem, context,
                                      result.profile.note + ", lockstep"));
      } else {
        // The sweep's runners-up (the winner is result.plan): the simulator re-scores the best few.
        const auto sweep = allocations_by_step_time(devices, problem.global_batch,
                                                    zero_micro_step_seconds(problem, zero), kSweepCandidates);
        for (std::size_t k = 1; k < sweep.size(); ++k)
          candidates.push_back(evaluate(per_device_plan(problem, sweep[k].devices, setting), problem, context,
                                        result.profile.note + ", sweep runner-up " + std::to_string(k)));
      }
      candidates.push_back(evaluate(std::move(result.plan), problem, context, result.profile.note));
    }
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_poplar_planner() { return std::make_unique<PoplarPlanner>(); }

} // namespace hetsim::strategies
