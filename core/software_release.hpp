#pragma once
/// A release of the software a run trains with, by major and minor number ("2.1" for PyTorch 2.1): it brings
/// its own CUDA libraries and kernels, so GPU constants measured with one release hold for it and later ones.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace hetsim {

struct SoftwareRelease {
  int major = 0;
  int minor = 0;
  bool given() const { return major > 0 || minor > 0; } ///< DeepSpeed's are 0.x
  auto operator<=>(const SoftwareRelease&) const = default;
  /// "2.1"
  std::string text() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// "MAJOR.MINOR" (not 0.0), optionally followed by ".PATCH" and a local version ("2.1.0+cu121", as torch.__version__
/// prints it); nullopt for anything else.
std::optional<SoftwareRelease> parse_software_release(std::string_view text);
/// The same for a PyTorch release, whose major number is never 0.
std::optional<SoftwareRelease> parse_pytorch_release(std::string_view text);

} // namespace hetsim
