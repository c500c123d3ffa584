#pragma once
/// An executor's own count of what it allocates, against a cap: how an executor without a device allocator of
/// its own (the cpu one) runs out of memory where a GPU would, and how any executor answers memory_use().

#include "exec/executor.hpp"

#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace hetsim::exec {

class MemoryBudget {
public:
  void set_cap(double cap_bytes) { cap_bytes_ = cap_bytes; }
  /// Counts `bytes` about to be allocated for `what`; throws OutOfMemory, counting nothing, past the cap.
  void take(std::size_t bytes, const char* what);
  void give(std::size_t bytes);
  MemoryUse use() const;

private:
  mutable std::mutex mutex_; // streams allocate concurrently
  double cap_bytes_    = std::numeric_limits<double>::infinity();
  std::size_t current_ = 0;
  std::size_t peak_    = 0;
};

/// A standard allocator that counts through a MemoryBudget, so that every container using it is in the count.
/// A host allocation the system refuses is out of memory too.
template <class T> class CountingAllocator {
public:
  using value_type = T;
  explicit CountingAllocator(MemoryBudget& budget) : budget_(&budget) {}
  template <class U> CountingAllocator(const CountingAllocator<U>& other) : budget_(other.budget()) {}

  T* allocate(std::size_t n)
  {
    budget_->take(n * sizeof(T), "host buffer");
    try {
      return static_cast<T*>(::operator new(n * sizeof(T)));
    } catch (const std::bad_alloc&) {
      budget_->give(n * sizeof(T));
      throw OutOfMemory("the host refused an allocation of " + std::to_string(n * sizeof(T)) + " bytes");
    }
  }
  void deallocate(T* p, std::size_t n)
  {
    budget_->give(n * sizeof(T)); // before the free, whose pointer `n` may be computed from
    ::operator delete(p);
  }
  MemoryBudget* budget() const { return budget_; }
  bool operator==(const CountingAllocator& other) const { return budget_ == other.budget_; }

private:
  MemoryBudget* budget_;
};

template <class T> using CountedVector = std::vector<T, CountingAllocator<T>>;

/// Host memory held but never computed on (model states, saved activations): allocated and counted, left
/// unwritten, so that holding it costs the timed step nothing and a cap above the host's own memory can still
/// be emulated (the system commits pages only when they are written).
class HeldBlock {
public:
  HeldBlock() = default;
  HeldBlock(MemoryBudget& budget, std::size_t bytes)
      : budget_(&budget), data_(CountingAllocator<char>(budget).allocate(bytes)), bytes_(bytes)
  {
  }
  HeldBlock(HeldBlock&& other) noexcept { swap(other); }
  HeldBlock& operator=(HeldBlock&& other) noexcept
  {
    swap(other);
    return *this;
  }
  ~HeldBlock()
  {
    if (data_)
      CountingAllocator<char>(*budget_).deallocate(data_, bytes_);
  }

private:
  void swap(HeldBlock& other) noexcept
  {
    std::swap(budget_, other.budget_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
  }

  MemoryBudget* budget_ = nullptr;
  char* data_           = nullptr;
  std::size_t bytes_    = 0;
};

} // namespace hetsim::exec
