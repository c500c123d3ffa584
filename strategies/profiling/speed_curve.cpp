#include "strategies/profiling/speed_curve.hpp"

#include "core/error.hpp"

// Boost 1.74's pchip.hpp calls unqualified isnan; <math.h> declares it globally.
#include <math.h>

#include <boost/math/interpolators/pchip.hpp>

#include <algorithm>

namespace hetsim::strategies {

namespace {

/// Speed at batches 1..max_batch through points (batch, speed), batches strictly increasing.
std::vector<double> tabulate(const std::vector<double>& batches, const std::vector<double>& speeds, int max_batch)
{
  std::vector<double> out(max_batch);
  if (batches.size() >= 4) {
    // Monotone between points: a speed curve that overshoots would invent a peak no measurement shows.
    boost::math::interpolators::pchip<std::vector<double>> spline{std::vector<double>(batches),
                                                                   std::vector<double>(speeds)};
    for (int b = 1; b <= max_batch; ++b)
      out[b - 1] = spline(std::clamp<double>(b, batches.front(), batches.back()));
    return out;
  }
  // PCHIP needs four points; below that, straight lines (and constant outside the points).
  for (int b = 1; b <= max_batch; ++b) {
    auto upper = std::lower_bound(batches.begin(), batches.end(), static_cast<double>(b));
    if (upper == batches.begin() || upper == batches.end()) {
      out[b - 1] = upper == batches.begin() ? speeds.front() : speeds.back();
      continue;
    }
    const auto i   = upper - batches.begin();
    const double t = (b - batches[i - 1]) / (batches[i] - batches[i - 1]);
    out[b - 1]     = speeds[i - 1] + t * (speeds[i] - speeds[i - 1]);
  }
  return out;
}

} // namespace

SpeedCurve::SpeedCurve(const DeviceProfile& profile)
{
  HETSIM_ASSERT(profile.max_batch >= 1 && !profile.points.empty());
  std::vector<double> batches, speeds;
  for (const ProfilePoint& p : profile.points) {
    if (!batches.empty() && p.batch <= batches.back())
      continue; // a batch measured twice: keep the first
    batches.push_back(p.batch);
    speeds.push_back(p.batch / p.step_seconds);
  }
  const std::vector<double> speed_at = tabulate(batches, speeds, profile.max_batch);
  step_seconds_.resize(profile.max_batch);
  slowest_up_to_.resize(profile.max_batch);
  for (int b = 1; b <= profile.max_batch; ++b)
    step_seconds_[b - 1] = b / speed_at[b - 1];
  for (int b = 1; b <= profile.max_batch; ++b) {
    slowest_up_to_[b - 1] = std::max(step_seconds_[b - 1], b > 1 ? slowest_up_to_[b - 2] : 0.0);
    peak_speed_           = std::max(peak_speed_, speed(b));
  }
  peak_low_ = peak_high_ = 0;
  for (int b = 1; b <= profile.max_batch; ++b)
    if (speed(b) >= (1 - kPeakTolerance) * peak_speed_) {
      if (peak_low_ == 0)
        peak_low_ = b;
      peak_high_ = b;
    }
}

int SpeedCurve::batch_within(double seconds) const
{
  // slowest_up_to_ is non-decreasing: the batches before the first one above `seconds` all fit.
  auto above = std::upper_bound(slowest_up_to_.begin(), slowest_up_to_.end(), seconds);
  return static_cast<int>(above - slowest_up_to_.begin());
}

} // namespace hetsim::strategies
