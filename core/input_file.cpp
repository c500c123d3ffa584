#include "core/input_file.hpp"

#include "core/error.hpp"

#include <filesystem>
#include <fstream>

namespace hetsim {
namespace {

/// A file name as messages show it: as it is, or quoted and escaped when it holds a control character (a name
/// read from a JSON file may hold a newline, which would break the one-line message).
std::string shown(const std::string& file)
{
  for (const char c : file)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return quote(file, 300);
  return file;
}

} // namespace

std::string read_input_file(const std::string& file, std::size_t bound)
{
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw InputError(shown(file) + ": cannot open file");
  std::string text;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  while (in) {
    const std::size_t had = text.size();
    text.resize(had + kChunk);
    in.read(text.data() + had, static_cast<std::streamsize>(kChunk));
    text.resize(had + static_cast<std::size_t>(in.gcount()));
    if (text.size() > bound)
      throw InputError(shown(file) + ": expected a file of at most " + std::to_string(bound >> 20) + " MiB, got more");
  }
  if (in.bad())
    throw InputError(shown(file) + ": cannot read file");
  return text;
}

std::string input_beside(const std::string& entry, const std::string& beside)
{
  if (entry.starts_with("preset:") || std::filesystem::path(entry).is_absolute())
    return entry;
  return (std::filesystem::path(beside).parent_path() / entry).lexically_normal().string();
}

} // namespace hetsim
