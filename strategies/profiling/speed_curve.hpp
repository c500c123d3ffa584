#pragma once
/// Poplar's performance curve of one device type: speed (sequences per second) over the batch size, a cubic
/// spline through the profiled points, tabulated at every batch from 1 to the device's maximum.

#include "strategies/profiling/profiler.hpp"

#include <vector>

namespace hetsim::strategies {

class SpeedCurve {
public:
  /// Through `profile`'s points (at least one; its max_batch at least 1). Monotone cubic (PCHIP) from four
  /// points on, linear below; constant outside the profiled range.
  explicit SpeedCurve(const DeviceProfile& profile);

  int max_batch() const { return static_cast<int>(step_seconds_.size()); }
  /// Sequences per second at `batch` (1..max_batch).
  double speed(int batch) const { return batch / step_seconds_[batch - 1]; }
  /// Seconds of one step of `batch` sequences (1..max_batch).
  double step_seconds(int batch) const { return step_seconds_[batch - 1]; }
  /// The largest batch whose step takes at most `seconds`, 0 when even one sequence takes longer.
  int batch_within(double seconds) const;
  /// The highest speed and the batch range within `tolerance` of it, where the device works at its peak.
  double peak_speed() const { return peak_speed_; }
  int peak_low() const { return peak_low_; }
  int peak_high() const { return peak_high_; }

  static constexpr double kPeakTolerance = 0.02;

private:
  std::vector<double> step_seconds_;  ///< [batch - 1]
  std::vector<double> slowest_up_to_; ///< running maximum of step_seconds_, so batch_within can bisect
  double peak_speed_ = 0;
  int peak_low_      = 1;
  int peak_high_     = 1;
};

} // namespace hetsim::strategies
