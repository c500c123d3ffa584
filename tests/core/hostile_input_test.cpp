/// Inputs and outputs as a hostile or careless user gives them: names that would break a one-line message, pipes
/// no one writes to, gzip files cut short, outputs named twice or read-only, temporaries a killed writer left.

#include "core/closest_name.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/input_stream.hpp"
#include "core/output_file.hpp"
#include "tests/temp_folder.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using hetsim::InputError;

namespace {

using Scratch = hetsim::test::TempFolder;

std::string cluster_error(const std::string& text)
{
  try {
    hetsim::cluster_from_json(nlohmann::json::parse(text), "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string gzip(const std::string& text)
{
  std::string out(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in   = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in  = static_cast<uInt>(text.size());
  z.next_out  = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string read_all(hetsim::InputStream& in)
{
  std::string text;
  char buffer[7]; // small reads: the gzip member boundaries fall inside them
  for (std::size_t got; (got = in.read(buffer, sizeof buffer)) > 0;)
    text.append(buffer, got);
  return text;
}

} // namespace

TEST_CASE("a message holding a newline, an escape or a bidirectional override prints on one line as it is")
{
  CHECK(hetsim::single_line("a\nb") == "a\\nb");
  CHECK(hetsim::single_line("x\x1b[31m") == "x\\x1b[31m");
  CHECK(hetsim::single_line("job \u202Egnp.exe") == "job \\u202egnp.exe");
  CHECK(hetsim::single_line("\u2066x\u2069") == "\\u2066x\\u2069");
  CHECK(hetsim::single_line("H100 \u00b7 80 GB") == "H100 \u00b7 80 GB"); // other UTF-8 stays
  CHECK(hetsim::holds_control_characters("a\tb"));
  CHECK(hetsim::holds_control_characters("\u202Ename"));
  CHECK_FALSE(hetsim::holds_control_characters("eu-west.node3 \u00e9"));
}

TEST_CASE("names with control characters, and names given twice, are refused naming the field")
{
  CHECK(cluster_error(R"({"name": "a\nb", "regions": [{"nodes": [{"gpu": "T4", "devices": 1}]}]})") ==
        "c.json: name: expected a name of 1 to 200 characters without control characters (a newline, a tab, an "
        "escape, a bidirectional override), got string \"a\\nb\"");
  CHECK(cluster_error(R"({"regions": [{"name": "eu\u202E", "nodes": [{"gpu": "T4", "devices": 1}]}]})")
            .find("regions[0].name: expected a name of 1 to 200") != std::string::npos);
  const std::string twice = cluster_error(R"({"regions": [{"nodes": [{"name": "n", "gpu": "T4", "devices": 1},
                                                                      {"name": "n", "gpu": "T4", "devices": 1}]}]})");
  CHECK(twice == "c.json: (top level): node 'n' is given twice (nodes 0 and 1); expected a name of its own for each node, as "
                 "slowdowns, jobs and overrides name them");
  // "repeat" names the copies a.0, a.1: a node of its own called a.1 would be a second one.
  CHECK(cluster_error(R"({"regions": [{"nodes": [{"name": "a", "gpu": "T4", "devices": 1, "repeat": 2},
                                                 {"name": "a.1", "gpu": "T4", "devices": 1}]}]})")
            .find("node 'a.1' is given twice") != std::string::npos);
  CHECK(cluster_error(R"({"regions": [{"name": "r", "nodes": [{"gpu": "T4", "devices": 1}]},
                                      {"name": "r", "nodes": [{"gpu": "T4", "devices": 1}]}],
                         "inter_region": {"latency_ms": [[0, 1], [1, 0]], "bandwidth_gbps": [[0, 1], [1, 0]]}})")
            .find("region 'r' is given twice") != std::string::npos);
}

TEST_CASE("a link slower than 1 kbit/s or a latency past 100 s is refused where it is read")
{
  const auto with_nic = [](const std::string& nic) {
    return cluster_error(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 1, "nic": )" + nic + "}]}]}");
  };
  CHECK(with_nic(R"({"bandwidth_gbps": 1e-300})") ==
        "c.json: regions[0].nodes[0].nic.bandwidth_gbps: expected a bandwidth of at least 1 kbit/s, got number "
        "1e-300");
  CHECK(with_nic(R"({"bandwidth_gbps": 1e300})").find("of at most 100000") != std::string::npos);
  CHECK(with_nic(R"({"bandwidth_gbps": 0.001, "latency_ms": 1e9})").find("latency_ms: expected a non-negative "
                                                                          "number of at most 100000") !=
        std::string::npos);
  CHECK(with_nic(R"({"bandwidth_gbps": 0.001, "latency_ms": 600})").empty()); // 1 Mbit/s and a satellite hop
}

TEST_CASE("a mistyped name gets the closest known one, and only a close one")
{
  const std::vector<std::string> gpus = {"A100-SXM4-80GB", "H100-SXM5-80GB", "V100-SXM2-32GB", "T4"};
  CHECK(hetsim::closest_name("H100-SXM-80GB", gpus) == "H100-SXM5-80GB");
  CHECK(hetsim::closest_name("t4", gpus) == "T4");
  CHECK(hetsim::closest_name("MI300X", gpus).empty());
  CHECK(hetsim::did_you_mean("a100-sxm4-80gb", gpus) == " (did you mean 'A100-SXM4-80GB'?)");
  CHECK(cluster_error(R"({"regions": [{"nodes": [{"gpu": "H100-SXM-80GB", "devices": 1}]}]})")
            .find("unknown GPU 'H100-SXM-80GB' (did you mean 'H100-SXM5-80GB'?); known:") != std::string::npos);
}

TEST_CASE("a pipe no one writes to is refused after its wait, a directory at once, never waited on for ever")
{
  Scratch scratch;
  const fs::path fifo = scratch.path / "cluster.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(hetsim::read_input_file(fifo.string(), hetsim::kMaxInputFileBytes, 0.2),
                       (fifo.string() + ": a pipe nothing was written to for 0.2 s; expected a file, or a pipe its "
                                        "writer fills")
                           .c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(hetsim::read_input_file(scratch.path.string()),
                       (scratch.path.string() + ": is a directory; expected a file").c_str(), InputError);
  // A pipe its writer fills is read whole (what `--cluster <(cat c.json)` gives).
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    std::ofstream(fifo) << "{\"x\": 1}";
    ::_exit(0);
  }
  CHECK(hetsim::read_input_file(fifo.string(), hetsim::kMaxInputFileBytes, 30) == "{\"x\": 1}");
  ::waitpid(writer, nullptr, 0);
}

TEST_CASE("gzip inputs inflate as they are read: concatenated members whole, a cut file refused, the bound kept")
{
  Scratch scratch;
  const std::string first = R"({"traceEvents": [)", second = R"(]})";
  const std::string both  = scratch.write("both.json.gz", gzip(first) + gzip(second));
  hetsim::InputStream whole(both, 1 << 20, true);
  CHECK(read_all(whole) == first + second);
  hetsim::InputStream plain(scratch.write("plain.json", first), 1 << 20, true); // not gzip: as it is
  CHECK(read_all(plain) == first);
  const std::string packed = gzip(std::string(1 << 16, 'x'));
  hetsim::InputStream cut(scratch.write("cut.json.gz", packed.substr(0, packed.size() / 2)), 1 << 20, true);
  CHECK_THROWS_WITH_AS(read_all(cut), doctest::Contains("cut.json.gz: cannot read (a truncated gzip file)"),
                       InputError);
  hetsim::InputStream bomb(scratch.write("bomb.json.gz", gzip(std::string(3 << 20, ' '))), 2 << 20, true);
  CHECK_THROWS_WITH_AS(read_all(bomb), doctest::Contains("bomb.json.gz: expected a file of at most 2 MiB inflated"),
                       InputError);
}

TEST_CASE("two outputs that name one file are refused before any is written; devices may take several")
{
  Scratch scratch;
  const std::string out = (scratch.path / "out.json").string();
  CHECK_THROWS_WITH_AS(hetsim::check_distinct_outputs({{"--report", out}, {"--trace", out}}),
                       ("--trace " + out +
                        ": is also the --report file, and one would replace the other; give each output a file of "
                        "its own")
                           .c_str(),
                       InputError);
  // Spelled differently, still one file.
  CHECK_THROWS_AS(hetsim::check_distinct_outputs({{"--out", out}, {"--best", (scratch.path / "." / "out.json").string()}}),
                  InputError);
  CHECK_NOTHROW(hetsim::check_distinct_outputs({{"--report", "/dev/null"}, {"--trace", "/dev/null"}}));
  CHECK_NOTHROW(hetsim::check_distinct_outputs({{"--report", out}, {"--trace", ""}}));
}

TEST_CASE("a read-only file is not replaced, by anyone")
{
  Scratch scratch;
  const std::string kept = scratch.write("kept.json", "{\"mine\": true}");
  ::chmod(kept.c_str(), 0444);
  CHECK_THROWS_WITH_AS(hetsim::check_output(kept, {}, "--report"),
                       ("--report " + kept + ": is read-only; refusing to replace it (make it writable first)").c_str(),
                       InputError);
  CHECK_THROWS_AS(hetsim::write_file_atomically(kept, "{}"), InputError);
  std::ifstream in(kept);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "{\"mine\": true}");
  CHECK_THROWS_WITH_AS(hetsim::check_output("", {}, "--report"), "--report: expected a file name, got an empty one",
                       InputError);
}

TEST_CASE("a temporary its writer abandoned is removed by the next write of that file; a live writer's stays")
{
  Scratch scratch;
  const pid_t gone = ::fork(); // a pid that no process has once it is reaped
  REQUIRE(gone >= 0);
  if (gone == 0)
    ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string abandoned = scratch.write(".t.json.tmp-hetsim-" + std::to_string(gone) + "-a1b2c3", "half");
  const std::string live      = scratch.write(".t.json.tmp-hetsim-" + std::to_string(::getpid()) + "-d4e5f6", "");
  const std::string other     = scratch.write(".u.json.tmp-hetsim-" + std::to_string(gone) + "-g7h8i9", "");
  const std::string recent    = scratch.write(".t.json.tmp-hetsim-" + std::to_string(gone) + "-j0k1l2", "");
  const auto hour_ago         = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const std::string& file : {abandoned, live, other})
    fs::last_write_time(file, hour_ago);
  hetsim::write_file_atomically((scratch.path / "t.json").string(), "{}");
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other)); // another file's: its own next write removes it
  CHECK(fs::exists(recent)); // touched minutes ago: maybe a writer on another machine sharing the folder
  std::size_t temporaries = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path))
    temporaries += entry.path().filename().string().find(".tmp-hetsim-") != std::string::npos ? 1 : 0;
  CHECK(temporaries == 3); // the write left none of its own
}

TEST_CASE("an output that is a pipe no process reads is refused after its wait, not written into for ever")
{
  // `search --best FIFO` hung until the fuzzer's 60 s limit: opening a pipe for writing waits for a reader.
  Scratch scratch;
  const fs::path fifo = scratch.path / "best.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(hetsim::write_file_atomically(fifo.string(), "{}", 0.2),
                       (fifo.string() + ": is a pipe no process reads from; expected a file, or a pipe its reader "
                                        "drains")
                           .c_str(),
                       InputError);
  // With a reader, it is written into as a shell's `>` would.
  const pid_t reader = ::fork();
  REQUIRE(reader >= 0);
  if (reader == 0) {
    std::ifstream in(fifo);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::_exit(text == "{\"ok\": 1}" ? 0 : 1);
  }
  hetsim::write_file_atomically(fifo.string(), "{\"ok\": 1}", 30);
  int status = 0;
  ::waitpid(reader, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("SIGTERM during a write removes its temporary, and the process still ends by SIGTERM")
{
  Scratch scratch;
  const std::string target = (scratch.path / "big.json").string();
  const std::string content(std::size_t{256} << 20, ' '); // long enough to be caught writing
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    ::signal(SIGTERM, SIG_DFL); // as the command line has it (the test runner catches it to report a crash)
    hetsim::write_file_atomically(target, content);
    ::_exit(0);
  }
  const auto temporary_there = [&] {
    for (const auto& entry : fs::directory_iterator(scratch.path))
      if (entry.path().filename().string().find(".tmp-hetsim-") != std::string::npos)
        return true;
    return false;
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!temporary_there() && std::chrono::steady_clock::now() < give_up) {
  }
  ::kill(writer, SIGTERM);
  int status = 0;
  ::waitpid(writer, &status, 0);
  if (!WIFSIGNALED(status)) { // the write won the race: nothing to check but that it finished whole
    WARN_MESSAGE(false, "the write ended before SIGTERM reached it");
    CHECK(fs::file_size(target) == content.size());
    return;
  }
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK_FALSE(temporary_there());
  CHECK_FALSE(fs::exists(target));
}
