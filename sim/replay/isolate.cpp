#include "sim/replay/isolate.hpp"

#include "core/error.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hetsim::sim {
namespace {

// First byte of the child's message: how the body ended.
enum class Outcome : char { ok = 'R', input_error = 'I', infeasible = 'P', backend = 'B', internal = 'X', error = 'E' };

constexpr std::size_t kStderrTail = 2000;

void write_all(int fd, const char* data, std::size_t size)
{
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      ::_exit(3);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void child_main(const std::function<std::string()>& body, int result_fd, int stderr_fd)
{
  // The child reports through the pipes only: whatever it prints goes to the captured stream, and crash
  // handlers inherited from the parent (doctest installs some) must not report as if they were the parent.
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT})
    std::signal(sig, SIG_DFL);
  ::dup2(stderr_fd, STDOUT_FILENO);
  ::dup2(stderr_fd, STDERR_FILENO);
  ::close(stderr_fd);
  std::string message;
  Outcome outcome = Outcome::ok;
  try {
    message = body();
  } catch (const InputError& e) {
    outcome = Outcome::input_error, message = e.what();
  } catch (const InfeasiblePlan& e) {
    outcome = Outcome::infeasible, message = e.what();
  } catch (const BackendUnavailable& e) {
    outcome = Outcome::backend, message = e.what();
  } catch (const InternalError& e) {
    outcome = Outcome::internal, message = e.what();
  } catch (const Error& e) {
    outcome = Outcome::error, message = e.what();
  } catch (const std::exception& e) {
    outcome = Outcome::internal, message = e.what();
  } catch (...) {
    outcome = Outcome::internal, message = "unknown exception";
  }
  // Tag, payload length, payload: the parent knows when the message is complete without waiting for EOF.
  const char tag             = static_cast<char>(outcome);
  const std::uint64_t length = message.size();
  write_all(result_fd, &tag, 1);
  write_all(result_fd, reinterpret_cast<const char*>(&length), sizeof length);
  write_all(result_fd, message.data(), message.size());
  ::close(result_fd);
  std::fflush(stderr);
  // Skip the parent's atexit handlers and static destructors (doctest, SimGrid): the child only reports.
  ::_exit(0);
}

constexpr std::size_t kHeaderBytes = 1 + sizeof(std::uint64_t);

bool message_complete(const std::string& result)
{
  if (result.size() < kHeaderBytes)
    return false;
  std::uint64_t length = 0;
  std::memcpy(&length, result.data() + 1, sizeof length);
  return result.size() >= kHeaderBytes + length;
}

/// Appends what `fd` has to `sink`; returns false at EOF or on error (and when nothing is ready, if non-blocking).
bool read_some(int fd, std::string& sink)
{
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    sink.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
}

/// Reads both pipes without letting either fill up, until the child has exited, and returns its wait status.
/// Does not rely on EOF alone: a child forked at the same time by another thread may hold copies of the pipes.
int drain_and_wait(pid_t pid, int result_fd, int stderr_fd, std::string& result, std::string& err)
{
  pollfd fds[2]         = {{result_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result, &err};
  int status            = 0;
  bool exited           = false;
  while (!exited) {
    const int ready = ::poll(fds, 2, 20);
    if (ready < 0 && errno != EINTR)
      throw InternalError(std::string("poll failed: ") + std::strerror(errno));
    for (int i = 0; ready > 0 && i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      if (!read_some(fds[i].fd, *sinks[i]))
        fds[i].fd = -1; // EOF: poll ignores negative descriptors
      if (i == 1 && err.size() > 4 * kStderrTail)
        err.erase(0, err.size() - kStderrTail);
    }
    const bool all_closed = fds[0].fd < 0 && fds[1].fd < 0;
    if (all_closed || message_complete(result) || ready == 0) {
      const pid_t done = ::waitpid(pid, &status, all_closed ? 0 : WNOHANG);
      if (done == pid)
        exited = true;
      else if (done < 0 && errno != EINTR)
        throw InternalError(std::string("waitpid failed: ") + std::strerror(errno));
    }
  }
  // The child is gone: take what is left in the pipes without blocking.
  for (int i = 0; i < 2; ++i) {
    const int fd = i == 0 ? result_fd : stderr_fd;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    while (read_some(fd, *sinks[i])) {
    }
  }
  return status;
}

std::string tail(const std::string& text)
{
  std::string t = text.size() > kStderrTail ? "..." + text.substr(text.size() - kStderrTail) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
    t.pop_back();
  return t;
}

} // namespace

std::string run_isolated(const std::function<std::string()>& body, std::string_view what)
{
  int result_pipe[2];
  int stderr_pipe[2];
  if (::pipe(result_pipe) != 0)
    throw InternalError(std::string(what) + ": pipe failed: " + std::strerror(errno));
  if (::pipe(stderr_pipe) != 0) {
    ::close(result_pipe[0]), ::close(result_pipe[1]);
    throw InternalError(std::string(what) + ": pipe failed: " + std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {result_pipe[0], result_pipe[1], stderr_pipe[0], stderr_pipe[1]})
      ::close(fd);
    throw InternalError(std::string(what) + ": fork failed: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(result_pipe[0]);
    ::close(stderr_pipe[0]);
    child_main(body, result_pipe[1], stderr_pipe[1]);
  }
  ::close(result_pipe[1]);
  ::close(stderr_pipe[1]);

  std::string result;
  std::string err;
  int status = 0;
  try {
    status = drain_and_wait(pid, result_pipe[0], stderr_pipe[0], result, err);
  } catch (...) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(result_pipe[0]);
    ::close(stderr_pipe[0]);
    throw;
  }
  ::close(result_pipe[0]);
  ::close(stderr_pipe[0]);

  const std::string prefix(what);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string text = prefix + ": the simulation process died of signal " + std::to_string(sig) + " (" +
                       strsignal(sig) + ")";
    if (!err.empty())
      text += "; its last output: " + tail(err);
    throw InternalError(text);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !message_complete(result)) {
    std::string text = prefix + ": the simulation process exited with status " +
                       std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " without a result";
    if (!err.empty())
      text += "; its last output: " + tail(err);
    throw InternalError(text);
  }
  const auto outcome = static_cast<Outcome>(result[0]);
  std::string payload = std::move(result);
  payload.erase(0, kHeaderBytes);
  switch (outcome) {
    case Outcome::ok:
      return payload;
    case Outcome::input_error:
      throw InputError(payload);
    case Outcome::infeasible:
      throw InfeasiblePlan(payload);
    case Outcome::backend:
      throw BackendUnavailable(payload);
    case Outcome::internal:
      throw InternalError(payload);
    case Outcome::error:
      throw Error(payload);
  }
  throw InternalError(prefix + ": unreadable result from the simulation process");
}

} // namespace hetsim::sim
