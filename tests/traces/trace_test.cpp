#include "core/error.hpp"
#include "traces/trace.hpp"

#include "trace_fixtures.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace hetsim::traces;
using hetsim::traces::testing::make_event;

TEST_CASE("chrome traces round-trip task ids, kinds, bytes, flops and times")
{
  Trace t;
  t.source        = "simulation";
  t.device_labels = {"dev0 V100", "dev1 T4"};
  t.events.push_back(make_event(7, "bwd s0 r0 t0 mb0", "backward", "compute", 1, 0.25, 0.75, 0, 3e12));
  t.events.push_back(make_event(3, "send s0 r0 t0 mb0", "send", "pipeline", 0, 0.1, 0.2, 1.5e7, 0));
  const auto path = std::filesystem::temp_directory_path() / "hetsim_trace_test.json";
  write_chrome_trace(t, path.string());
  const Trace back = read_chrome_trace(path.string());
  std::filesystem::remove(path);

  CHECK(back.source == "simulation");
  CHECK(back.device_labels == t.device_labels);
  REQUIRE(back.events.size() == 2);
  // Written sorted by device then start.
  CHECK(back.events[0].task_id == 3);
  CHECK(back.events[0].bytes == 1.5e7);
  CHECK(back.events[0].stream == "pipeline");
  CHECK(back.events[1].kind == "backward");
  CHECK(back.events[1].flops == 3e12);
  CHECK(back.events[1].start_s == 0.25);
  CHECK(back.events[1].end_s == 0.75);
}

TEST_CASE("the same trace gives the same bytes")
{
  Trace t;
  t.device_labels = {"d0"};
  t.events.push_back(make_event(1, "a", "forward", "compute", 0, 0, 1, 0, 1));
  std::ostringstream a, b;
  write_chrome_trace(t, a);
  write_chrome_trace(t, b);
  CHECK(a.str() == b.str());
  CHECK(a.str().find("\"traceEvents\"") != std::string::npos);
}

TEST_CASE("a bad trace file names the file")
{
  const auto path = std::filesystem::temp_directory_path() / "hetsim_bad_trace.json";
  std::ofstream(path) << R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 0, "ts": 0, "dur": 1}]})";
  CHECK_THROWS_WITH_AS(read_chrome_trace(path.string()), doctest::Contains("traceEvents[0]: missing required field 'args'"),
                       hetsim::InputError);
  std::filesystem::remove(path);
}

TEST_CASE("overlapping events of one stream go to separate lanes so that viewers nest them")
{
  Trace t;
  t.device_labels = {"d0"};
  t.events.push_back(make_event(1, "send a", "send", "pipeline", 0, 0.0, 2.0, 1, 0));
  t.events.push_back(make_event(2, "recv b", "recv", "pipeline", 0, 1.0, 3.0, 1, 0));
  t.events.push_back(make_event(3, "send c", "send", "pipeline", 0, 2.5, 4.0, 1, 0));
  std::ostringstream out;
  write_chrome_trace(t, out);
  const auto doc = nlohmann::json::parse(out.str());
  std::map<int, int> tid_of;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      tid_of[e["args"]["task_id"].get<int>()] = e["tid"].get<int>();
  CHECK(tid_of[1] != tid_of[2]);
  CHECK(tid_of[3] == tid_of[1]); // lane 1 is free again at 2.5
}

TEST_CASE("the scale of a measured run round-trips; an unscaled trace does not mention it")
{
  Trace t;
  t.device_labels = {"d0"};
  t.events.push_back(make_event(1, "a", "forward", "compute", 0, 0, 1, 0, 1));
  std::ostringstream unscaled;
  write_chrome_trace(t, unscaled);
  CHECK(unscaled.str().find("scale") == std::string::npos);

  t.scale         = 0.25;
  const auto path = std::filesystem::temp_directory_path() / "hetsim_scaled_trace_test.json";
  write_chrome_trace(t, path.string());
  const Trace back = read_chrome_trace(path.string());
  std::filesystem::remove(path);
  CHECK(back.scale == 0.25);
}
