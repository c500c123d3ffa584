#pragma once
/// A folder of a test's own in the system's temporary directory (mkdtemp: a fresh name no other run or user
/// holds), removed with what it holds when the test ends.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace hetsim::test {

struct TempFolder {
  std::filesystem::path path;
  explicit TempFolder(const std::string& name = "test")
  {
    std::string pattern = (std::filesystem::temp_directory_path() / ("hetsim_" + name + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempFolder()
  {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempFolder(const TempFolder&)            = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  /// Writes `content` to the file `name` here; its path.
  std::string write(const std::string& name, const std::string& content) const
  {
    std::ofstream(path / name, std::ios::binary) << content;
    return (path / name).string();
  }
};

} // namespace hetsim::test
