#include "core/input_file.hpp"

#include "core/input_stream.hpp"

#include <filesystem>

namespace hetsim {

std::string read_input_file(const std::string& file, std::size_t bound, double silent_pipe_s)
{
  InputStream in(file, bound, false, silent_pipe_s);
  std::string text;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  for (;;) {
    const std::size_t had = text.size();
    text.resize(had + kChunk);
    const std::size_t got = in.read(text.data() + had, kChunk);
    text.resize(had + got);
    if (got == 0)
      return text;
  }
}

std::string input_beside(const std::string& entry, const std::string& beside)
{
  if (entry.starts_with("preset:") || std::filesystem::path(entry).is_absolute())
    return entry;
  return (std::filesystem::path(beside).parent_path() / entry).lexically_normal().string();
}

} // namespace hetsim
