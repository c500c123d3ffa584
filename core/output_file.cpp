#include "core/output_file.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

namespace hetsim {
namespace {

namespace fs = std::filesystem;

/// The directory a new file at `path` would be created in.
fs::path directory_of(const std::string& path)
{
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// A file marked read-only (no write permission for anyone), or one this user may not write: replacing it in
/// its directory would go around the mark, as `rm` asks before it does, even for root.
bool read_only(const std::string& path)
{
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return false;
  return (info.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(path.c_str(), W_OK) != 0;
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

/// A named pipe, opened for writing once a process reads it: a plain open would wait for ever when none
/// does. Waits as an input pipe may stay silent (HETSIM_SILENT_PIPE_S), then refuses.
int open_pipe_for_writing(const std::string& path, double silent_pipe_s)
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(silent_pipe_s);
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK); // a reader is there: plain writes from now on
      return fd;
    }
    if (errno != ENXIO)
      throw InputError(shown_path(path) + ": cannot write (" + std::strerror(errno) + ")");
    if (std::chrono::steady_clock::now() >= deadline)
      throw InputError(shown_path(path) + ": is a pipe no process reads from; expected a file, or a pipe its "
                                          "reader drains");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// A device, a pipe or what a link leads to: written into where it is, as a shell's `>` would.
void write_in_place(const std::string& path, const std::string& content, double silent_pipe_s)
{
  std::error_code ec;
  if (fs::is_fifo(fs::status(path, ec))) {
    const int fd       = open_pipe_for_writing(path, silent_pipe_s);
    const bool written = write_all(fd, content);
    ::close(fd);
    if (!written)
      throw InputError(shown_path(path) + ": writing failed (the reader went away)");
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << content) || !out.flush())
    throw InputError(path + ": writing failed");
}

/// Whether two output paths name one file: the same file when both exist, the same absolute path otherwise.
bool same_output(const std::string& a, const std::string& b)
{
  std::error_code ec;
  const fs::file_status a_status = fs::status(a, ec), b_status = fs::status(b, ec);
  if (fs::exists(a_status) && fs::exists(b_status))
    return fs::equivalent(a, b, ec) && fs::is_regular_file(a_status);
  const fs::path a_path = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path b_path = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return a_path == b_path;
}

/// ".NAME.tmp-hetsim-" beside `path`: what every temporary of `path` begins with.
std::string temporary_prefix(const std::string& path)
{
  return (directory_of(path) / ("." + fs::path(path).filename().string() + ".tmp-hetsim-")).string();
}

/// Removes the temporaries of `path` whose writer is gone (a write killed with SIGKILL, or a machine that
/// stopped): each names its writer's pid, and one whose pid no process has and untouched for ten minutes is an
/// abandoned file.
void remove_abandoned_temporaries(const std::string& path)
{
  std::error_code ec;
  const std::string prefix = fs::path(temporary_prefix(path)).filename().string();
  for (const auto& entry : fs::directory_iterator(directory_of(path), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec))
      continue;
    const std::string rest = name.substr(prefix.size());
    const auto dash        = rest.find('-');
    if (dash == std::string::npos || dash == 0 || dash > 9 ||
        rest.find_first_not_of("0123456789") != dash)
      continue; // not one of ours, or one from before temporaries named their writer
    // A pid is this machine's and this namespace's: a writer elsewhere on a shared folder may hold one no process
    // here has, so a temporary must also be old (its writer would have touched it) to be taken for abandoned.
    const pid_t writer = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    const auto age     = fs::file_time_type::clock::now() - fs::last_write_time(entry.path(), ec);
    if (!ec && age > std::chrono::minutes(10) && ::kill(writer, 0) != 0 && errno == ESRCH)
      fs::remove(entry.path(), ec);
  }
}

// The temporary being written, for the signal handler: a write interrupted by SIGINT, SIGTERM or SIGHUP removes
// it before the process ends as the signal would have ended it.
char g_temporary[4096];
volatile sig_atomic_t g_temporary_set = 0;
std::atomic<bool> g_slot_taken{false};

void remove_temporary_and_end(int signal)
{
  if (g_temporary_set)
    ::unlink(g_temporary);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

/// Registers a temporary with the signal handler for the length of a write, where the signals would otherwise
/// end the process without a word (their handlers are the default ones); one write at a time holds the slot.
class TemporaryGuard {
public:
  explicit TemporaryGuard(const std::string& temporary)
  {
    if (temporary.size() >= sizeof g_temporary || g_slot_taken.exchange(true))
      return;
    std::memcpy(g_temporary, temporary.c_str(), temporary.size() + 1);
    std::atomic_signal_fence(std::memory_order_release); // the name is whole before the handler may read it
    g_temporary_set = 1;
    owner_          = true;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction current {};
      ::sigaction(kSignals[i], nullptr, &current);
      if (current.sa_handler != SIG_DFL)
        continue; // the program handles it: its own flow ends the write and removes the file
      struct sigaction action {};
      action.sa_handler = remove_temporary_and_end;
      ::sigaction(kSignals[i], &action, &previous_[i]);
      installed_[i] = true;
    }
  }
  ~TemporaryGuard()
  {
    if (!owner_)
      return;
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i])
        ::sigaction(kSignals[i], &previous_[i], nullptr);
    g_temporary_set = 0;
    g_slot_taken    = false;
  }
  TemporaryGuard(const TemporaryGuard&)            = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;

private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  bool owner_ = false;
  std::array<bool, 3> installed_{};
  std::array<struct sigaction, 3> previous_{};
};

} // namespace

void check_output(const std::string& output, const std::vector<std::string>& inputs, const std::string& option)
{
  std::error_code ec;
  if (output.empty())
    throw InputError(option + ": expected a file name, got an empty one");
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
  if (fs::is_regular_file(fs::status(output, ec)) && read_only(output))
    throw InputError(option + " " + output + ": is read-only; refusing to replace it (make it writable first)");
  if (fs::exists(own))
    return; // an existing file, device or link: written as write_file_atomically says
  const fs::path directory = directory_of(output);
  if (!fs::is_directory(directory, ec))
    throw InputError(option + " " + output + ": its directory " + directory.string() + " does not exist");
  if (::access(directory.c_str(), W_OK) != 0)
    throw InputError(option + " " + output + ": its directory " + directory.string() + " is not writable (" +
                     std::strerror(errno) + ")");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs)
{
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [first_option, first] = outputs[i];
      const auto& [second_option, second] = outputs[j];
      if (!first.empty() && !second.empty() && same_output(first, second))
        throw InputError(second_option + " " + second + ": is also the " + first_option +
                         " file, and one would replace the other; give each output a file of its own");
    }
}

void write_file_atomically(const std::string& path, const std::string& content, double silent_pipe_s)
{
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(path, ec);
  if (fs::is_symlink(own)) {
    if (!fs::exists(fs::status(path, ec)))
      throw InputError(path + ": is a link to nothing; refusing to write through it");
    if (fs::is_directory(fs::status(path, ec)))
      throw InputError(path + ": is a directory; expected a file name");
    write_in_place(path, content, silent_pipe_s); // the link stays; what it leads to is written
    return;
  }
  if (fs::is_directory(own))
    throw InputError(path + ": is a directory; expected a file name");
  if (fs::exists(own) && !fs::is_regular_file(own)) {
    write_in_place(path, content, silent_pipe_s); // renaming over a device or a pipe would replace the node
    return;
  }
  if (fs::exists(own) && read_only(path))
    throw InputError(path + ": is read-only; refusing to replace it (make it writable first)");
  remove_abandoned_temporaries(path);
  // A name no other process or planted link holds: mkstemp creates it exclusively (O_EXCL does not follow links).
  // The writer's pid in it lets a later write tell an abandoned one (its writer gone) from a live one.
  std::string temporary = temporary_prefix(path) + std::to_string(::getpid()) + "-XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    throw InputError(path + ": cannot write (" + std::strerror(errno) + "; is the directory there and writable?)");
  const TemporaryGuard guard(temporary);
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
