#include "core/software_release.hpp"

#include <cctype>

namespace hetsim {
namespace {

/// Reads the digits at `at` (at most 4, so the number stays small) and moves past them.
std::optional<int> read_number(std::string_view text, std::size_t& at)
{
  const std::size_t start = at;
  while (at < text.size() && at - start < 5 && std::isdigit(static_cast<unsigned char>(text[at])))
    ++at;
  if (at == start || at - start > 4)
    return std::nullopt;
  return std::stoi(std::string(text.substr(start, at - start)));
}

} // namespace

std::optional<SoftwareRelease> parse_software_release(std::string_view text)
{
  std::size_t at = 0;
  const auto major = read_number(text, at);
  if (!major || at >= text.size() || text[at] != '.')
    return std::nullopt;
  ++at;
  const auto minor = read_number(text, at);
  if (!minor || (*major == 0 && *minor == 0)) // 0.0 is no release; DeepSpeed's are 0.x
    return std::nullopt;
  if (at < text.size() && text[at] == '.') { // a patch number
    ++at;
    if (!read_number(text, at))
      return std::nullopt;
  }
  if (at < text.size() && text[at] != '+') // a local version such as +cu121 may follow
    return std::nullopt;
  return SoftwareRelease{*major, *minor};
}

std::optional<SoftwareRelease> parse_pytorch_release(std::string_view text)
{
  const auto release = parse_software_release(text);
  if (!release || release->major == 0)
    return std::nullopt;
  return release;
}

} // namespace hetsim
