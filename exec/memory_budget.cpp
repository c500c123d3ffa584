#include "exec/memory_budget.hpp"

#include <algorithm>

namespace hetsim::exec {

void MemoryBudget::take(std::size_t bytes, const char* what)
{
  std::lock_guard lock(mutex_);
  if (static_cast<double>(current_ + bytes) > cap_bytes_)
    throw OutOfMemory(std::string(what) + " of " + std::to_string(bytes) + " bytes would pass the memory cap of " +
                      std::to_string(static_cast<long long>(cap_bytes_)) + " bytes (" + std::to_string(current_) +
                      " allocated)");
  current_ += bytes;
  peak_ = std::max(peak_, current_);
}

void MemoryBudget::give(std::size_t bytes)
{
  std::lock_guard lock(mutex_);
  current_ -= std::min(bytes, current_);
}

MemoryUse MemoryBudget::use() const
{
  std::lock_guard lock(mutex_);
  return MemoryUse{static_cast<double>(current_), static_cast<double>(peak_)};
}

} // namespace hetsim::exec
