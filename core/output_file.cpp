#include "core/output_file.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace hetsim {
namespace {

namespace fs = std::filesystem;

/// The directory a new file at `path` would be created in.
fs::path directory_of(const std::string& path)
{
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// The process's file-creation mask (read by setting it back at once): new outputs get what a plain open would.
mode_t current_umask()
{
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

/// Writes all of `content` to `fd`; false on a short or failed write (a full disk).
bool write_all(int fd, const std::string& content)
{
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return false;
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

/// A device, a pipe or what a link leads to: written into where it is, as a shell's `>` would.
void write_in_place(const std::string& path, const std::string& content)
{
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << content) || !out.flush())
    throw InputError(path + ": writing failed");
}

} // namespace

void check_output(const std::string& output, const std::vector<std::string>& inputs, const std::string& option)
{
  std::error_code ec;
  for (const auto& input : inputs) {
    if (input.rfind("preset:", 0) == 0)
      continue;
    if (fs::exists(output, ec) && fs::exists(input, ec) && fs::equivalent(output, input, ec))
      throw InputError(option + " " + output + ": refusing to overwrite an input file");
  }
  const fs::file_status own = fs::symlink_status(output, ec);
  if (fs::is_symlink(own) && !fs::exists(fs::status(output, ec)))
    throw InputError(option + " " + output + ": is a link to nothing; expected a file name or a link to a file");
  if (fs::is_directory(fs::status(output, ec)))
    throw InputError(option + " " + output + ": is a directory; expected a file name");
  if (fs::exists(own))
    return; // an existing file, device or link: written as write_file_atomically says
  const fs::path directory = directory_of(output);
  if (!fs::is_directory(directory, ec))
    throw InputError(option + " " + output + ": its directory " + directory.string() + " does not exist");
  if (::access(directory.c_str(), W_OK) != 0)
    throw InputError(option + " " + output + ": its directory " + directory.string() + " is not writable (" +
                     std::strerror(errno) + ")");
}

void write_file_atomically(const std::string& path, const std::string& content)
{
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(path, ec);
  if (fs::is_symlink(own)) {
    if (!fs::exists(fs::status(path, ec)))
      throw InputError(path + ": is a link to nothing; refusing to write through it");
    if (fs::is_directory(fs::status(path, ec)))
      throw InputError(path + ": is a directory; expected a file name");
    write_in_place(path, content); // the link stays; what it leads to is written
    return;
  }
  if (fs::is_directory(own))
    throw InputError(path + ": is a directory; expected a file name");
  if (fs::exists(own) && !fs::is_regular_file(own)) {
    write_in_place(path, content); // renaming over a device or a pipe would replace the node
    return;
  }
  // A name no other process or planted link holds: mkstemp creates it exclusively (O_EXCL does not follow links).
  std::string temporary = (directory_of(path) / ("." + fs::path(path).filename().string() + ".tmp-hetsim-XXXXXX"))
                              .string();
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    throw InputError(path + ": cannot write (" + std::strerror(errno) + "; is the directory there and writable?)");
  const bool written = write_all(fd, content);
  const bool closed  = ::close(fd) == 0;
  if (!written || !closed) {
    fs::remove(temporary, ec); // a full disk leaves nothing behind
    throw InputError(path + ": writing failed (is the disk full?)");
  }
  ::chmod(temporary.c_str(), 0666 & ~current_umask()); // mkstemp made it 0600
  // What is at `path` may have changed since it was looked at: only a regular file or nothing is replaced.
  const fs::file_status now = fs::symlink_status(path, ec);
  if (fs::exists(now) && !fs::is_regular_file(now)) {
    fs::remove(temporary, ec);
    throw InputError(path + ": was replaced by something that is not a regular file while writing; left alone");
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temporary, ec);
    throw InputError(path + ": cannot replace the file: " + reason);
  }
}

} // namespace hetsim
