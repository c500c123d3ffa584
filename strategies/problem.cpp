#include "strategies/problem.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::strategies {

double Problem::memory_capacity(int device) const
{
  HETSIM_ASSERT(cluster != nullptr);
  const double physical = cluster->gpu_of(device).memory_bytes;
  return memory_limit_bytes > 0 ? std::min(memory_limit_bytes, physical) : physical;
}

} // namespace hetsim::strategies
