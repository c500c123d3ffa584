#pragma once
/// Runs the `hetsim` binary for end-to-end tests and gives them scratch files.

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace hetsim::e2e {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string output; ///< stdout and stderr together
};

/// Runs a shell command line (e.g. under mpirun); HETSIM_CLI_PATH is the binary.
inline RunResult run_command(const std::string& command_line)
{
  const std::string command = command_line + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe))
    result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// `hetsim ARGS`.
inline RunResult run_hetsim(const std::string& args)
{
  return run_command(std::string(HETSIM_CLI_PATH) + " " + args);
}

/// The last line of a command's output, without its newline: where the CLI's error goes, after any progress.
inline std::string last_line(const std::string& output)
{
  const std::string text = !output.empty() && output.back() == '\n' ? output.substr(0, output.size() - 1) : output;
  return text.substr(text.rfind('\n') + 1);
}

inline std::string read_file(const fs::path& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// A scratch directory of this test's own (mkdtemp: a fresh name no other run or user holds), removed at the end
/// of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
  {
    std::string pattern = (fs::temp_directory_path() / ("hetsim_e2e_" + name + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& content = "") const
  {
    const fs::path p = path / name;
    if (!content.empty())
      std::ofstream(p) << content;
    return p.string();
  }
};

} // namespace hetsim::e2e
