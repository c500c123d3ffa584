/// Result files: never an input overwritten, a device node replaced or a temporary file left behind.

#include "core/error.hpp"
#include "core/output_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using hetsim::InputError;

namespace {

fs::path scratch(const std::string& name)
{
  const fs::path dir = fs::temp_directory_path() / ("hetsim_output_file_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path)
{
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST_CASE("an output that names an input is refused before anything is written")
{
  const fs::path dir = scratch("input");
  const std::string cluster = (dir / "cluster.json").string();
  std::ofstream(cluster) << "{}";
  CHECK_THROWS_WITH_AS(hetsim::check_output_is_not_input(cluster, {"preset:x", cluster}, "--report"),
                       doctest::Contains("refusing to overwrite an input file"), InputError);
  CHECK_NOTHROW(hetsim::check_output_is_not_input((dir / "report.json").string(), {cluster}, "--report"));
  CHECK(read(cluster) == "{}");
  fs::remove_all(dir);
}

TEST_CASE("writing replaces a regular file whole, refuses a directory and writes into a device")
{
  const fs::path dir = scratch("write");
  const std::string file = (dir / "out.json").string();
  hetsim::write_file_atomically(file, "first");
  hetsim::write_file_atomically(file, "second");
  CHECK(read(file) == "second");
  CHECK_FALSE(fs::exists(file + ".tmp-hetsim"));

  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically(dir.string(), "x"), doctest::Contains("is a directory"),
                       InputError);
  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically((dir / "missing" / "out.json").string(), "x"),
                       doctest::Contains("cannot write"), InputError);

  hetsim::write_file_atomically("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
  CHECK_FALSE(fs::exists("/dev/null.tmp-hetsim"));
  fs::remove_all(dir);
}

TEST_CASE("a full disk leaves no temporary file behind")
{
  if (!fs::is_character_file("/dev/full")) {
    MESSAGE("/dev/full not present: skipped");
    return;
  }
  // /dev/full is a device, so it is written in place and the write fails there.
  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically("/dev/full", std::string(1 << 16, 'x')),
                       doctest::Contains("writing failed"), InputError);
  CHECK(fs::is_character_file("/dev/full"));
}
