#pragma once
/// Unit conversions. Internally everything is SI: seconds, bytes, bytes per second, FLOP/s.

#include <cmath>
#include <cstdint>

namespace hetsim::units {

inline constexpr double kGbps = 1e9 / 8.0;       ///< 1 Gbit/s in bytes per second
inline constexpr double kGBps = 1e9;             ///< 1 GB/s (decimal) in bytes per second
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kMillisecond = 1e-3;
inline constexpr double kMicrosecond = 1e-6;
inline constexpr double kTera = 1e12;

/// A byte count as the integer it is, for outputs (JSON, CSV): 9333333333, not 9333333333.0 or 9.33e9.
inline std::int64_t whole_bytes(double bytes)
{
  return static_cast<std::int64_t>(std::llround(bytes));
}

} // namespace hetsim::units
