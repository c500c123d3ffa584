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
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    throw InputError(path + ": is a directory; expected a file name");
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or a pipe (/dev/null, /dev/stdout): write into it, since renaming over it would replace the node.
    std::ofstream out(path, std::ios::binary);
    if (!out || !(out << content) || !out.flush())
      throw InputError(path + ": writing failed");
    return;
  }
  const std::string temporary = path + ".tmp-hetsim";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(path + ": cannot write (is the directory there and writable?)");
    out << content;
    if (!out.flush()) {
      out.close();
      fs::remove(temporary, ec); // a full disk leaves nothing behind
      throw InputError(path + ": writing failed (is the disk full?)");
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temporary, ec);
    throw InputError(path + ": cannot replace the file: " + reason);
  }
}

} // namespace hetsim
