#pragma once
/// Random choices that depend only on the seed: std::mt19937_64's output is fixed by the standard, while
/// std::uniform_int_distribution and std::shuffle may differ between standard libraries.

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace hetsim::strategies {

/// Uniform integer in [0, n).
inline int pick(std::mt19937_64& rng, int n)
{
  return static_cast<int>(rng() % static_cast<std::uint64_t>(n));
}

/// Uniform double in [0, 1).
inline double unit(std::mt19937_64& rng)
{
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// Fisher–Yates, from the back.
template <class T> void shuffle(std::vector<T>& values, std::mt19937_64& rng)
{
  for (int k = static_cast<int>(values.size()) - 1; k > 0; --k)
    std::swap(values[k], values[pick(rng, k + 1)]);
}

} // namespace hetsim::strategies
