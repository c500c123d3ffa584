#pragma once
/// Running `hetsim` as a child process for the exec tests: output captured in a file, pids of its ranks read
/// from the launcher's "started N ranks, pids ..." line.

#include "tests/temp_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hetsim::test {

inline std::string read_text(const std::filesystem::path& path)
{
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// A scratch directory of the test's own, removed at the end of the test.
struct ScratchDir : TempFolder {
  explicit ScratchDir(const std::string& name) : TempFolder("exec_" + name) {}
};

/// `hetsim` (or another program) with `args`, stdout and stderr into `log`.
class Child {
public:
  Child(const std::vector<std::string>& args, const std::filesystem::path& log) : Child(HETSIM_CLI_PATH, args, log) {}
  /// `program` is looked up on PATH.
  Child(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& log)
  {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> pointers;
      for (auto& a : argv)
        pointers.push_back(a.data());
      pointers.push_back(nullptr);
      ::execvp(pointers[0], pointers.data());
      ::_exit(127);
    }
  }
  ~Child()
  {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  /// Sends `signal` and reaps the child.
  void kill(int signal)
  {
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    exited_ = true;
  }

  /// The exit code, or -1 when it did not exit within `timeout_s` (or died of a signal).
  int wait(double timeout_s)
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

private:
  pid_t pid_   = -1;
  bool exited_ = false;
};

/// The rank pids the launcher printed, waiting up to `timeout_s` for the line.
inline std::vector<pid_t> rank_pids(const std::filesystem::path& log, double timeout_s)
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = read_text(log);
    const auto at          = text.find("pids");
    const auto end         = text.find('\n', at);
    if (at != std::string::npos && end != std::string::npos) {
      std::istringstream in(text.substr(at + 4, end - at - 4));
      std::vector<pid_t> pids;
      for (pid_t p; in >> p;)
        pids.push_back(p);
      return pids;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

/// Whether a process exists and is not a zombie.
inline bool alive(pid_t pid)
{
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty())
    return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

inline std::string data_file(const std::string& name)
{
  return std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/" + name;
}

} // namespace hetsim::test
