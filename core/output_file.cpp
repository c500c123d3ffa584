#include "core/output_file.hpp"

#include "core/error.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace hetsim {

void check_output_is_not_input(const std::string& output, const std::vector<std::string>& inputs,
                               const std::string& option)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& input : inputs) {
    if (input.rfind("preset:", 0) == 0)
      continue;
    if (fs::exists(output, ec) && fs::exists(input, ec) && fs::equivalent(output, input, ec))
      throw InputError(option + " " + output + ": refusing to overwrite an input file");
  }
}

void write_file_atomically(const std::string& path, const std::string& content)
{
  namespace fs = std::filesystem;
  const std::string temporary = path + ".tmp-hetsim";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(path + ": cannot write (is the directory there and writable?)");
    out << content;
    if (!out.flush())
      throw InputError(path + ": writing failed");
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw InputError(path + ": cannot replace the file: " + ec.message());
  }
}

} // namespace hetsim
