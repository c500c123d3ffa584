#pragma once
/// A fixed table of an enum's values and their names in input files, read both ways:
///   constexpr EnumNames<Dtype, 2> kNames{{{{Dtype::fp16, "fp16"}, {Dtype::fp32, "fp32"}}}};

#include <array>
#include <string>
#include <string_view>
#include <utility>

namespace hetsim {

template <class Enum, std::size_t N>
struct EnumNames {
  std::array<std::pair<Enum, std::string_view>, N> entries;

  constexpr std::string_view name(Enum value) const
  {
    for (const auto& [e, n] : entries)
      if (e == value)
        return n;
    return entries[0].second;
  }

  /// Sets `out` and returns true when `text` is one of the names.
  constexpr bool parse(std::string_view text, Enum& out) const
  {
    for (const auto& [e, n] : entries)
      if (n == text) {
        out = e;
        return true;
      }
    return false;
  }

  /// Every name, comma-separated, for messages.
  std::string joined() const
  {
    std::string text;
    for (const auto& [e, n] : entries)
      text += (text.empty() ? "" : ", ") + std::string(n);
    return text;
  }
};

} // namespace hetsim
