#include "sim/isolate.hpp"

#include "core/error.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <utility>

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
  const char tag = static_cast<char>(outcome);
  write_all(result_fd, &tag, 1);
  write_all(result_fd, message.data(), message.size());
  ::close(result_fd);
  std::fflush(stderr);
  // Skip the parent's atexit handlers and static destructors (doctest, SimGrid): the child only reports.
  ::_exit(0);
}

/// Reads both pipes to their end without letting either fill up.
void drain(int result_fd, int stderr_fd, std::string& result, std::string& err)
{
  pollfd fds[2] = {{result_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result, &err};
  int open_count = 2;
  char buffer[1 << 16];
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      throw InternalError(std::string("poll failed: ") + std::strerror(errno));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
        continue;
      }
      sinks[i]->append(buffer, static_cast<std::size_t>(n));
      if (i == 1 && err.size() > 4 * kStderrTail)
        err.erase(0, err.size() - kStderrTail);
    }
  }
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
  try {
    drain(result_pipe[0], stderr_pipe[0], result, err);
  } catch (...) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw InternalError(std::string(what) + ": waitpid failed: " + std::strerror(errno));

  const std::string prefix(what);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string text = prefix + ": the simulation process died of signal " + std::to_string(sig) + " (" +
                       strsignal(sig) + ")";
    if (!err.empty())
      text += "; its last output: " + tail(err);
    throw InternalError(text);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.empty()) {
    std::string text = prefix + ": the simulation process exited with status " +
                       std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " without a result";
    if (!err.empty())
      text += "; its last output: " + tail(err);
    throw InternalError(text);
  }
  const auto outcome = static_cast<Outcome>(result[0]);
  std::string payload = std::move(result);
  payload.erase(0, 1);
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
