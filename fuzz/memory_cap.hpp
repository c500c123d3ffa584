#pragma once
/// The contract's memory bound: no input may make HetSim use more than this.

#include "core/sanitizers.hpp"

#include <sys/resource.h>

namespace hetsim::fuzz {

constexpr rlim_t kMemoryCapBytes = rlim_t{4} << 30;

/// Caps this process's (and its forked simulations') address space at kMemoryCapBytes, so that an input that
/// would exhaust memory ends in std::bad_alloc, a failure. Sanitizer builds reserve terabytes of address
/// space for shadow memory and are left uncapped.
inline void cap_memory()
{
  if (kAddressSanitizer)
    return;
  const rlimit cap{kMemoryCapBytes, kMemoryCapBytes};
  setrlimit(RLIMIT_AS, &cap);
}

} // namespace hetsim::fuzz
