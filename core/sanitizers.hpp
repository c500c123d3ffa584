#pragma once
/// Whether this build runs under AddressSanitizer (GCC's -fsanitize=address or Clang's).

#if defined(__SANITIZE_ADDRESS__)
#define HETSIM_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HETSIM_ADDRESS_SANITIZER 1
#endif
#endif

namespace hetsim {

#ifdef HETSIM_ADDRESS_SANITIZER
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

} // namespace hetsim
