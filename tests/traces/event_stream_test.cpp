/// Traces are read one event at a time: gzipped or plain, HetSim's or the profiler's, with bounds on one value
/// and on what is kept that hold in memory, whatever the file's size.

#include "traces/event_stream.hpp"

#include "core/error.hpp"
#include "traces/pytorch_trace.hpp"
#include "traces/trace.hpp"
#include "tests/temp_folder.hpp"
#include "trace_fixtures.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace hetsim::traces;
using hetsim::InputError;
using hetsim::traces::testing::make_event;

namespace {

/// A folder of the test's own, which also writes gzip as `gzip` does.
struct Scratch : hetsim::test::TempFolder {
  std::string write_gzipped(const std::string& name, const std::string& content) const
  {
    const std::string file = (path / name).string();
    gzFile out             = gzopen(file.c_str(), "wb");
    REQUIRE(out != nullptr);
    REQUIRE(gzwrite(out, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
    gzclose(out);
    return file;
  }
};

std::string error_of(const std::function<void()>& read)
{
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("events come one at a time, in order, with the members beside them")
{
  Scratch scratch;
  const std::string file = scratch.write(
      "t.json", R"({"schemaVersion": 1, "traceEvents": [{"a": 1}, {"b": [2, {"c": 3}]}], "displayTimeUnit": "ms"})");
  std::vector<std::string> seen;
  const TraceMembers members = read_trace_events(file, [&](const nlohmann::json& event, std::size_t index) {
    seen.push_back(std::to_string(index) + event.dump());
  });
  CHECK(seen == std::vector<std::string>{"0{\"a\":1}", "1{\"b\":[2,{\"c\":3}]}"});
  CHECK(members == nlohmann::json{{"schemaVersion", 1}, {"displayTimeUnit", "ms"}});
  // The format's other spelling: the events alone, as an array.
  seen.clear();
  read_trace_events(scratch.write("bare.json", R"([{"a": 1}])"),
                    [&](const nlohmann::json& event, std::size_t) { seen.push_back(event.dump()); });
  CHECK(seen == std::vector<std::string>{"{\"a\":1}"});
}

TEST_CASE("a HetSim trace reads the same gzipped as plain")
{
  Scratch scratch;
  Trace t;
  t.source        = "cpu";
  t.device_labels = {"dev0", "dev1"};
  t.events.push_back(make_event(4, "fwd", "forward", "compute", 1, 0.5, 0.75, 0, 2e9));
  std::ostringstream text;
  write_chrome_trace(t, text);
  const Trace plain  = read_chrome_trace(scratch.write("t.json", text.str()));
  const Trace zipped = read_chrome_trace(scratch.write_gzipped("t.json.gz", text.str()));
  REQUIRE(zipped.events.size() == 1);
  CHECK(zipped.events[0].flops == plain.events[0].flops);
  CHECK(zipped.device_labels == plain.device_labels);
  CHECK(zipped.source == "cpu");
  CHECK_FALSE(is_pytorch_trace(scratch.write_gzipped("t2.json.gz", text.str())));
}

TEST_CASE("what is not a trace is refused in one line naming the file and the place")
{
  Scratch scratch;
  const auto read = [&](const std::string& name, const std::string& text) {
    return error_of([&] { read_trace_events(scratch.write(name, text), [](const nlohmann::json&, std::size_t) {}); });
  };
  CHECK(read("cut.json", R"({"traceEvents": [{"a": 1})").find("cut.json: not a JSON trace (invalid JSON:") !=
        std::string::npos);
  CHECK(read("none.json", R"({"otherData": {}})").find("none.json: traceEvents: expected the array") !=
        std::string::npos);
  CHECK(read("scalar.json", "17").find("scalar.json: (top level): expected an object with the array traceEvents") !=
        std::string::npos);
  CHECK(read("twice.json", R"({"traceEvents": [{"a": 1, "a": 2}]})")
            .find("twice.json: traceEvents[0]: expected each key once in an object, got 'a' twice") !=
        std::string::npos);
  CHECK(read("deep.json", "{\"traceEvents\": [" + std::string(100, '[') + std::string(100, ']') + "]}")
            .find("levels of nesting") != std::string::npos);
  CHECK(error_of([&] { read_trace_events((scratch.path / "missing.json").string(), {}); })
            .find("missing.json: cannot open file") != std::string::npos);
}

TEST_CASE("one value past its bound stops the reading there, before it fills memory")
{
  Scratch scratch;
  // A string of 65 MiB in one event: before, the whole file (and then the string) was held.
  std::string text = R"({"traceEvents": [{"name": ")";
  text.append(kMaxTraceValueBytes + (1 << 20), 'a');
  text += "\"}]}";
  const std::string file = scratch.write("long.json", text);
  text.clear();
  const std::string error = error_of([&] { read_trace_events(file, [](const nlohmann::json&, std::size_t) {}); });
  CHECK(error.find("long.json: expected each event (and each member beside traceEvents) to be at most 64 MiB of "
                   "JSON, got a longer one near byte 17") != std::string::npos);
}

TEST_CASE("what a reader keeps is bounded")
{
  KeptBytes kept("big.json");
  kept.add(kMaxKeptTraceBytes - 1);
  kept.add(1);
  CHECK_THROWS_WITH_AS(kept.add(1),
                       "big.json: holds more events than HetSim keeps in memory (512 MiB of them); profile fewer "
                       "steps, or split the trace",
                       InputError);
}

TEST_CASE("a gzipped profiler trace without its header in the first MiB is read as a profiler trace")
{
  Scratch scratch;
  // Before, the sniffing read the gzip bytes as text and sent the file to HetSim's reader: "invalid JSON '\x1f'".
  const std::string pad = std::string(1 << 20, 'p');
  const std::string file =
      scratch.write_gzipped("late.json.gz", R"({"traceEvents": [{"ph": "i", "name": ")" + pad + R"("}]})");
  CHECK(is_pytorch_trace(file));
  const std::string error = error_of([&] { read_pytorch_trace(file); });
  CHECK(error.find("late.json.gz: traceEvents: no GPU kernels") != std::string::npos);
}

TEST_CASE("a trace given as a pipe is refused where its kind is told, not misread from its middle")
{
  Scratch scratch;
  const fs::path fifo = scratch.path / "trace.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string error = error_of([&] { (void)is_pytorch_trace(fifo.string()); });
  CHECK(error.find("trace.json: is a pipe; a trace is read twice") != std::string::npos);
}
