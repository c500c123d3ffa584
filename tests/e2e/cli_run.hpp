#pragma once
/// Running the hetsim binary from e2e tests: a command line's exit code and output, and scratch folders.

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hetsim::testing {

struct CliResult {
  int exit_code = -1;
  std::string output; ///< stdout and stderr together
};

/// Runs a shell command line (use HETSIM_CLI_PATH for the binary).
inline CliResult run_command(const std::string& command_line)
{
  CliResult result;
  FILE* pipe = popen((command_line + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe))
    result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string slurp(const std::filesystem::path& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// A scratch folder removed at the end of the test.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("hetsim_e2e_" + name))
  {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& content = "") const
  {
    const auto p = path / name;
    if (!content.empty())
      std::ofstream(p) << content;
    return p.string();
  }
};

} // namespace hetsim::testing
