#include "strategies/planners/poplar/poplar_allocation.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <queue>
#include <string>

namespace hetsim::strategies {
namespace {

void require_batch_per_device(std::size_t devices, long long global_batch)
{
  if (devices == 0 || global_batch < static_cast<long long>(devices))
    throw InfeasiblePlan("poplar: expected a global batch of at least one sequence per device (" +
                         std::to_string(devices) + "), got " + std::to_string(global_batch));
}

/// Adds `count` sequences to `batch`, one at a time, each to the device that finishes first with it
/// (`seconds(i, new_batch)`), never above `cap[i]`; ties go to the lower device index.
void place_greedily(std::vector<int>& batch, const std::vector<int>& cap, long long count,
                    const std::function<double(int, int)>& seconds)
{
  using Entry = std::pair<double, int>; // finishing time with one more, device
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (int i = 0; i < static_cast<int>(batch.size()); ++i)
    if (batch[i] < cap[i])
      queue.emplace(seconds(i, batch[i] + 1), i);
  for (; count > 0; --count) {
    HETSIM_ASSERT(!queue.empty());
    const int i = queue.top().second;
    queue.pop();
    if (++batch[i] < cap[i])
      queue.emplace(seconds(i, batch[i] + 1), i);
  }
}

} // namespace

BatchAllocation allocate_by_peak_speed(const std::vector<const SpeedCurve*>& devices, int global_batch)
{
  require_batch_per_device(devices.size(), global_batch);
  const int n = static_cast<int>(devices.size());
  double cluster_speed = 0;
  for (const SpeedCurve* curve : devices)
    cluster_speed += curve->peak_speed();
  const double optimal_seconds = global_batch / cluster_speed;

  // Every device needs at least one sequence to be a replica at all; the floor keeps the sum within gbs
  // except through that minimum, and then at most one per device goes back.
  std::vector<int> share(n, 1);
  long long placed = 0;
  for (int i = 0; i < n; ++i) {
    share[i] = std::max(1, static_cast<int>(std::floor(optimal_seconds * devices[i]->peak_speed())));
    placed += share[i];
  }
  auto finish = [&](int i, int batch) { return batch / devices[i]->peak_speed(); };
  while (placed > global_batch) { // take back from the device that finishes last
    int last = -1;
    for (int i = 0; i < n; ++i)
      if (share[i] > 1 && (last < 0 || finish(i, share[i]) > finish(last, share[last])))
        last = i;
    --share[last];
    --placed;
  }
  place_greedily(share, std::vector<int>(n, INT_MAX), global_batch - placed, finish);

  BatchAllocation allocation;
  allocation.devices.resize(n);
  for (int i = 0; i < n; ++i) {
    DeviceBatch& d        = allocation.devices[i];
    d.micro_batch         = std::min(devices[i]->peak_high(), share[i]);
    d.grad_accum          = (share[i] + d.micro_batch - 1) / d.micro_batch;
    // The same number of micro-steps with even micro-batches where that still adds up: a short last
    // micro-batch would leave the gradient all-reduce little backward to hide behind.
    const int even = (share[i] + d.grad_accum - 1) / d.grad_accum;
    if (share[i] - (d.grad_accum - 1) * even >= 1)
      d.micro_batch = even;
    d.last_micro_batch    = share[i] - (d.grad_accum - 1) * d.micro_batch;
    const double seconds  = (d.grad_accum - 1) * devices[i]->step_seconds(d.micro_batch) +
                           devices[i]->step_seconds(d.last_micro_batch);
    allocation.seconds = std::max(allocation.seconds, seconds);
  }
  return allocation;
}

std::vector<BatchAllocation> allocations_by_step_time(const std::vector<const SpeedCurve*>& devices, int global_batch,
                                                      double communication_seconds, int count)
{
  require_batch_per_device(devices.size(), global_batch);
  const int n = static_cast<int>(devices.size());
  // Devices of one type share a curve: the sweep works per curve, weighted by its device count.
  std::vector<const SpeedCurve*> curves;
  std::vector<long long> devices_of_curve;
  for (const SpeedCurve* curve : devices) {
    auto it = std::find(curves.begin(), curves.end(), curve);
    if (it == curves.end()) {
      curves.push_back(curve);
      devices_of_curve.push_back(1);
    } else {
      ++devices_of_curve[it - curves.begin()];
    }
  }
  double shortest = 0; // every device must take at least one sequence per micro-step
  std::vector<double> times;
  for (const SpeedCurve* curve : curves) {
    shortest = std::max(shortest, curve->step_seconds(1));
    for (int b = 1; b <= curve->max_batch(); ++b)
      times.push_back(curve->step_seconds(b));
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());

  std::vector<std::pair<double, double>> by_wall; // (wall time, micro-step time t)
  for (double t : times) {
    if (t < shortest)
      continue;
    long long per_step = 0;
    for (std::size_t c = 0; c < curves.size(); ++c)
      per_step += devices_of_curve[c] * curves[c]->batch_within(t);
    const long long steps = (global_batch + per_step - 1) / per_step;
    const long long last  = global_batch - (steps - 1) * per_step;
    if (last < n) // the last micro-step needs a sequence on every device
      continue;
    by_wall.emplace_back(steps * (t + communication_seconds), t);
  }
  if (by_wall.empty())
    throw InfeasiblePlan("poplar: no micro-step time splits a global batch of " + std::to_string(global_batch) +
                         " sequences over " + std::to_string(n) + " devices with one on each in the last step");
  std::sort(by_wall.begin(), by_wall.end());

  std::vector<BatchAllocation> result;
  for (const auto& [wall, t] : by_wall) {
    if (static_cast<int>(result.size()) == count)
      break;
    std::vector<int> micro(n), last(n, 1);
    long long per_step = 0;
    for (int i = 0; i < n; ++i) {
      micro[i] = devices[i]->batch_within(t);
      per_step += micro[i];
    }
    const int steps = static_cast<int>((global_batch + per_step - 1) / per_step);
    place_greedily(last, micro, global_batch - (steps - 1) * per_step - n,
                   [&](int i, int batch) { return devices[i]->step_seconds(batch); });

    BatchAllocation allocation;
    allocation.devices.resize(n);
    double last_step = 0;
    for (int i = 0; i < n; ++i) {
      allocation.devices[i] = DeviceBatch{micro[i], steps, last[i]};
      last_step             = std::max(last_step, devices[i]->step_seconds(last[i]));
    }
    allocation.seconds = (steps - 1) * (t + communication_seconds) + last_step + communication_seconds;
    result.push_back(std::move(allocation));
  }
  return result;
}

BatchAllocation allocate_by_step_time(const std::vector<const SpeedCurve*>& devices, int global_batch,
                                      double communication_seconds)
{
  return allocations_by_step_time(devices, global_batch, communication_seconds, 1).front();
}

} // namespace hetsim::strategies
