/// Result files: never an input overwritten, a device node or a link replaced, a planted link followed or a
/// temporary file left behind.

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "tests/temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using hetsim::InputError;

namespace {

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
  const hetsim::test::TempFolder folder("output_file_input");
  const fs::path& dir = folder.path;
  const std::string cluster = (dir / "cluster.json").string();
  std::ofstream(cluster) << "{}";
  CHECK_THROWS_WITH_AS(hetsim::check_output(cluster, {"preset:x", cluster}, "--report"),
                       doctest::Contains("refusing to overwrite an input file"), InputError);
  CHECK_NOTHROW(hetsim::check_output((dir / "report.json").string(), {cluster}, "--report"));
  CHECK(read(cluster) == "{}");
}

TEST_CASE("an output location that cannot be written is refused before any work, naming the option")
{
  const hetsim::test::TempFolder folder("output_file_check");
  const fs::path& dir = folder.path;
  const std::string missing = "--out " + (dir / "missing" / "x.json").string() + ": its directory";
  CHECK_THROWS_WITH_AS(hetsim::check_output((dir / "missing" / "x.json").string(), {}, "--out"),
                       doctest::Contains(missing.c_str()), InputError);
  CHECK_THROWS_WITH_AS(hetsim::check_output(dir.string(), {}, "--out"), doctest::Contains("is a directory"),
                       InputError);
  fs::create_symlink(dir / "nowhere", dir / "dangling.json");
  CHECK_THROWS_WITH_AS(hetsim::check_output((dir / "dangling.json").string(), {}, "--report"),
                       doctest::Contains("is a link to nothing"), InputError);
  if (::geteuid() != 0) { // root writes anywhere
    fs::create_directories(dir / "locked");
    fs::permissions(dir / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH_AS(hetsim::check_output((dir / "locked" / "x.json").string(), {}, "--out"),
                         doctest::Contains("is not writable"), InputError);
    fs::permissions(dir / "locked", fs::perms::owner_all);
  }
  CHECK_NOTHROW(hetsim::check_output((dir / "new.json").string(), {}, "--out"));
}

TEST_CASE("a link is written through and stays a link; a link to nothing is refused")
{
  const hetsim::test::TempFolder folder("output_file_link");
  const fs::path& dir = folder.path;
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink(dir / "target.json", dir / "out.json");
  hetsim::write_file_atomically((dir / "out.json").string(), "new");
  CHECK(fs::is_symlink(dir / "out.json"));
  CHECK(read(dir / "target.json") == "new");
  fs::create_symlink(dir / "nowhere", dir / "dangling.json");
  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically((dir / "dangling.json").string(), "x"),
                       doctest::Contains("is a link to nothing"), InputError);
  CHECK(fs::is_symlink(dir / "dangling.json"));
  CHECK_FALSE(fs::exists(dir / "nowhere"));
}

TEST_CASE("the temporary file has a name of its own: a planted link or a file of the old fixed name is left alone")
{
  const hetsim::test::TempFolder folder("output_file_planted");
  const fs::path& dir = folder.path;
  std::ofstream(dir / "victim") << "precious";
  fs::create_symlink(dir / "victim", dir / "out.json.tmp-hetsim");
  std::ofstream(dir / "report.json.tmp-hetsim") << "an input";
  hetsim::write_file_atomically((dir / "out.json").string(), "result");
  hetsim::write_file_atomically((dir / "report.json").string(), "report");
  CHECK(read(dir / "victim") == "precious");
  CHECK(read(dir / "report.json.tmp-hetsim") == "an input");
  CHECK(read(dir / "out.json") == "result");
  CHECK(read(dir / "report.json") == "report");
}

TEST_CASE("writing replaces a regular file whole, refuses a directory and writes into a device")
{
  const hetsim::test::TempFolder folder("output_file_write");
  const fs::path& dir = folder.path;
  const std::string file = (dir / "out.json").string();
  hetsim::write_file_atomically(file, "first");
  hetsim::write_file_atomically(file, "second");
  CHECK(read(file) == "second");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir))
    ++entries;
  CHECK(entries == 1); // no temporary file left beside it

  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically(dir.string(), "x"), doctest::Contains("is a directory"),
                       InputError);
  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically((dir / "missing" / "out.json").string(), "x"),
                       doctest::Contains("cannot write"), InputError);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK(static_cast<mode_t>(fs::status(file).permissions()) == (0666 & ~mask)); // as a plain open makes it

  hetsim::write_file_atomically("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
  CHECK_FALSE(fs::exists("/dev/null.tmp-hetsim"));
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
