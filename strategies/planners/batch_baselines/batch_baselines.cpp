/// The two baselines Poplar compares with, on the same per-device plans: DeepSpeed (one micro-batch size
/// everywhere, the largest the smallest GPU holds) and Whale (the batch split in proportion to datasheet FP16
/// peak). Both raise the ZeRO stage as Poplar does, so the three differ only in how they split the batch.

#include "strategies/planners/poplar/device_batch_plan.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::strategies {
namespace {

/// `total` split in proportion to `weights`, at least 1 each (total >= weights.size()); rounding by largest
/// remainder, ties to the lower index.
std::vector<int> split_proportionally(long long total, const std::vector<double>& weights)
{
  const int n = static_cast<int>(weights.size());
  double sum  = 0;
  for (double w : weights)
    sum += w;
  std::vector<double> exact(n);
  std::vector<int> share(n);
  long long placed = 0;
  for (int i = 0; i < n; ++i) {
    exact[i] = total * weights[i] / sum;
    share[i] = std::max(1, static_cast<int>(std::floor(exact[i])));
    placed += share[i];
  }
  while (placed < total) { // the largest shortfall gains one
    int chosen = 0;
    for (int i = 1; i < n; ++i)
      if (exact[i] - share[i] > exact[chosen] - share[chosen])
        chosen = i;
    ++share[chosen];
    ++placed;
  }
  while (placed > total) { // the largest excess gives one back
    int chosen = -1;
    for (int i = 0; i < n; ++i)
      if (share[i] > 1 && (chosen < 0 || share[i] - exact[i] > share[chosen] - exact[chosen]))
        chosen = i;
    --share[chosen];
    --placed;
  }
  return share;
}

class DeepSpeedPlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "deepspeed");
    const int n = problem.cluster->device_count();
    if (problem.global_batch % n != 0)
      throw InfeasiblePlan("deepspeed: expected a global batch divisible by the " + std::to_string(n) +
                           " devices (the same micro-batch everywhere), got " + std::to_string(problem.global_batch));
    const int per_device = problem.global_batch / n;
    const auto profiler  = context.make_profiler(problem);
    std::vector<Candidate> candidates;
    for (int stage : requested_zero_stages(context, "deepspeed")) {
      const ClusterProfile profile = profile_cluster(problem, *profiler, stage);
      int smallest                 = per_device;
      for (const DeviceProfile& p : profile.profiles)
        smallest = std::min(smallest, p.max_batch);
      int micro = 1; // the largest that divides the per-device batch
      for (int d : divisors(per_device))
        if (d <= smallest)
          micro = d;
      const std::vector<DeviceBatch> batches(n, DeviceBatch{micro, per_device / micro, micro});
      candidates.push_back(evaluate(per_device_plan(problem, batches, profile.setting), problem, context,
                                    profile.note));
    }
    return candidates;
  }
};

class WhalePlanner final : public Planner {
public:
  std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const override
  {
    require_global_batch(problem, "whale");
    const Cluster& cluster = *problem.cluster;
    const int n            = cluster.device_count();
    if (problem.global_batch < n)
      throw InfeasiblePlan("whale: expected a global batch of at least one sequence per device (" +
                           std::to_string(n) + "), got " + std::to_string(problem.global_batch));
    std::vector<double> peak(n);
    for (int d = 0; d < n; ++d)
      peak[d] = cluster.gpu_of(d).peak_flops(problem.dtype);
    const auto profiler = context.make_profiler(problem);
    std::vector<Candidate> candidates;
    for (int stage : requested_zero_stages(context, "whale")) {
      const ClusterProfile profile = profile_cluster(problem, *profiler, stage);
      // Every micro-step splits its batch by peak FLOP/s; the fewest micro-steps whose shares fit.
      for (int steps = 1; steps <= problem.global_batch; ++steps) {
        const long long step_batch = (problem.global_batch + steps - 1) / steps;
        const long long last_batch = problem.global_batch - (steps - 1) * step_batch;
        if (step_batch < n || last_batch < n)
          continue;
        const auto micro = split_proportionally(step_batch, peak);
        const auto last  = split_proportionally(last_batch, peak);
        bool fits        = true;
        for (int d = 0; d < n && fits; ++d)
          fits = micro[d] <= profile.max_batch(d) && last[d] <= micro[d];
        if (!fits)
          continue;
        std::vector<DeviceBatch> batches;
        for (int d = 0; d < n; ++d)
          batches.push_back(DeviceBatch{micro[d], steps, last[d]});
        candidates.push_back(evaluate(per_device_plan(problem, batches, profile.setting), problem, context,
                                      profile.note));
        break;
      }
    }
    if (candidates.empty())
      throw InfeasiblePlan("whale: no number of micro-steps splits the global batch of " +
                           std::to_string(problem.global_batch) + " within every device's memory");
    return candidates;
  }
};

} // namespace

std::unique_ptr<Planner> make_deepspeed_planner() { return std::make_unique<DeepSpeedPlanner>(); }
std::unique_ptr<Planner> make_whale_planner() { return std::make_unique<WhalePlanner>(); }

} // namespace hetsim::strategies
