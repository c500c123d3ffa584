#include "exec/launcher.hpp"

#include "core/error.hpp"
#include "exec/liveness.hpp"
#include "exec/rank.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

namespace hetsim::exec {
namespace {

volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int signal)
{
  g_stop_signal = signal;
}

/// In the child, between fork and exec: only async-signal-safe calls, and _exit on failure.
[[noreturn]] void exec_rank(const LaunchOptions& options, int rank, pid_t parent, char** argv, char** envp)
{
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) // the launcher died before prctl took effect
    ::_exit(127);
  if (!options.namespaces.empty()) {
    char path[512] = "/var/run/netns/";
    std::strncat(path, options.namespaces[rank].c_str(), sizeof path - std::strlen(path) - 1);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      const char message[] = "hetsim: cannot enter the rank's network namespace\n";
      (void)!::write(2, message, sizeof message - 1);
      ::_exit(126);
    }
  }
  ::execve(argv[0], argv, envp);
  ::_exit(127);
}

std::string describe_status(int status)
{
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  if (WIFSTOPPED(status))
    return std::string("was stopped by signal ") + std::to_string(WSTOPSIG(status)) + " (" +
           ::strsignal(WSTOPSIG(status)) + ")";
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

} // namespace

void order_by_cause(std::vector<EndedRank>& ended)
{
  std::stable_sort(ended.begin(), ended.end(), [](const EndedRank& a, const EndedRank& b) {
    return WIFSIGNALED(a.status) && !WIFSIGNALED(b.status);
  });
}

std::string default_bind_address()
{
  struct ifaddrs* list = nullptr;
  std::string found    = "127.0.0.1";
  if (::getifaddrs(&list) != 0)
    return found;
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
      continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    found = text;
    break;
  }
  ::freeifaddrs(list);
  return found;
}

void launch(const LaunchOptions& options)
{
  HETSIM_ASSERT(options.ranks >= 1 && !options.command.empty());
  HETSIM_ASSERT(options.namespaces.empty() || static_cast<int>(options.namespaces.size()) == options.ranks);

  // Everything the children need is built before fork: after it only async-signal-safe calls are allowed.
  std::vector<std::vector<std::string>> environments(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "HETSIM_", 7) != 0 || std::strncmp(*e, "HETSIM_EXECUTOR_PATH=", 21) == 0)
        environments[r].emplace_back(*e);
    environments[r].push_back("HETSIM_RANK=" + std::to_string(r));
    environments[r].push_back("HETSIM_WORLD_SIZE=" + std::to_string(options.ranks));
    environments[r].push_back("HETSIM_STORE_DIR=" + options.store_dir);
    if (options.namespaces.empty())
      environments[r].push_back("HETSIM_BIND=127.0.0.1");
  }
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings)
      out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<std::string> command = options.command;
  std::vector<char*> argv          = pointers(command);

  struct sigaction action{};
  action.sa_handler = on_stop_signal;
  struct sigaction old_int{}, old_term{};
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);

  const pid_t self = ::getpid();
  std::vector<pid_t> pids(options.ranks, -1);
  std::vector<int> statuses(options.ranks, 0);
  int running = 0;
  std::string launch_error;
  for (int r = 0; r < options.ranks; ++r) {
    std::vector<char*> envp = pointers(environments[r]);
    const pid_t pid         = ::fork();
    if (pid == 0)
      exec_rank(options, r, self, argv.data(), envp.data());
    if (pid < 0) {
      launch_error = std::string("cannot start rank ") + std::to_string(r) + ": " + std::strerror(errno);
      break;
    }
    pids[r] = pid;
    ++running;
  }
  std::string started;
  for (int r = 0; r < running; ++r)
    started += " " + std::to_string(pids[r]);
  std::cerr << "hetsim run: started " << running << " rank" << (running == 1 ? "" : "s") << ", pids" << started
            << std::endl;

  using SteadyClock = std::chrono::steady_clock;
  std::optional<SteadyClock::time_point> kill_at;
  if (!launch_error.empty())
    kill_at = SteadyClock::now();
  std::vector<std::string> failures;
  std::vector<char> killed(options.ranks, 0);
  std::vector<std::optional<SteadyClock::time_point>> stopped_since(options.ranks);
  std::vector<int> stop_statuses(options.ranks, 0);
  // The first failure ends the run: the others are told at once (they may be blocked in a rendezvous that would
  // wait for its timeout) and get the grace period to report and exit on their own.
  const auto tolerance =
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(options.stop_tolerance_s));
  auto rank_failed = [&](int r, const std::string& what, pid_t pid) {
    const std::string failure = "rank " + std::to_string(r) + " (pid " + std::to_string(pid) + ") " + what;
    failures.push_back(failure);
    if (kill_at)
      return;
    Liveness::abort_run(options.store_dir, failure);
    kill_at = SteadyClock::now() +
              std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(options.grace_s));
  };
  std::vector<EndedRank> ended; // failed ranks reaped but not yet reported
  // Called once every rank that ended since the last look is reaped.
  auto report_ended = [&] {
    order_by_cause(ended);
    for (const EndedRank& e : ended)
      rank_failed(e.rank, describe_status(e.status), e.pid);
    ended.clear();
  };
  while (running > 0) {
    int status      = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (pid > 0) {
      for (int r = 0; r < options.ranks; ++r) {
        if (pids[r] != pid)
          continue;
        if (WIFSTOPPED(status)) {
          // SIGSTOP (not the terminal's job control, which stops the launcher too): the rank may be continued
          // (a debugger detaching), so its clock starts.
          if (WSTOPSIG(status) == SIGSTOP && !stopped_since[r]) {
            stopped_since[r] = SteadyClock::now();
            stop_statuses[r] = status;
          }
          break;
        }
        if (WIFCONTINUED(status)) {
          stopped_since[r].reset();
          break;
        }
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !killed[r])
          ended.push_back({r, status, pid});
        pids[r] = -1;
        --running;
      }
      continue;
    }
    report_ended();
    // A rank stopped past the tolerance will not answer again: it fails before its peers' own timeouts do.
    for (int r = 0; r < options.ranks; ++r)
      if (stopped_since[r] && !killed[r] && SteadyClock::now() - *stopped_since[r] > tolerance) {
        char text[64];
        std::snprintf(text, sizeof text, " and was not continued within %.3g s", options.stop_tolerance_s);
        rank_failed(r, describe_status(stop_statuses[r]) + text, pids[r]);
        ::kill(pids[r], SIGKILL);
        killed[r] = 1;
      }
    if (g_stop_signal && !kill_at) {
      failures.push_back(std::string("the launcher got ") + ::strsignal(g_stop_signal));
      kill_at = SteadyClock::now();
    }
    if (kill_at && SteadyClock::now() >= *kill_at) {
      for (int r = 0; r < options.ranks; ++r)
        if (pids[r] > 0 && !killed[r]) {
          ::kill(pids[r], SIGKILL);
          killed[r] = 1;
          failures.push_back("rank " + std::to_string(r) + " (pid " + std::to_string(pids[r]) +
                             ") had not exited and was killed");
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  report_ended();
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);

  if (!launch_error.empty())
    failures.insert(failures.begin(), launch_error);
  if (failures.empty())
    return;
  std::string message = "run failed: ";
  for (std::size_t i = 0; i < failures.size(); ++i)
    message += (i ? "; " : "") + failures[i];
  throw RankFailure(message);
}

} // namespace hetsim::exec
