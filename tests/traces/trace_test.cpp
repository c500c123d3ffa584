#include "core/error.hpp"
#include "traces/trace.hpp"

#include "trace_fixtures.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

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
  // A task id past int: 5e9 read as 705,032,704 before.
  std::ofstream(path) << R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 1,
                             "args": {"task_id": 5000000000, "kind": "forward"}}]})";
  CHECK_THROWS_WITH_AS(read_chrome_trace(path.string()),
                       doctest::Contains("traceEvents[0].args.task_id: expected a non-negative integer, got number "
                                         "5000000000"),
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

TEST_CASE("each send draws an arrow to its matching recv, on the threads the two slices are on")
{
  Trace t;
  t.device_labels = {"d0", "d1"};
  TraceEvent send = make_event(4, "send s0 mb0", "send", "pipeline", 0, 1.0, 2.0, 1e6, 0);
  TraceEvent recv = make_event(9, "recv s1 mb0", "recv", "pipeline", 1, 1.5, 2.0, 1e6, 0);
  send.match      = 9;
  recv.match      = 4;
  t.events        = {send, recv, make_event(5, "fwd", "forward", "compute", 1, 0, 1.5, 0, 1)};
  std::ostringstream out;
  write_chrome_trace(t, out);
  const auto doc = nlohmann::json::parse(out.str());
  std::map<int, std::pair<int, int>> thread_of; // task id -> (pid, tid)
  std::vector<nlohmann::json> flows;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X")
      thread_of[e["args"]["task_id"].get<int>()] = {e["pid"].get<int>(), e["tid"].get<int>()};
    if (e["ph"] == "s" || e["ph"] == "f")
      flows.push_back(e);
  }
  REQUIRE(flows.size() == 2);
  const auto& start = flows[0]["ph"] == "s" ? flows[0] : flows[1];
  const auto& end   = flows[0]["ph"] == "s" ? flows[1] : flows[0];
  CHECK(start["id"] == end["id"]);
  CHECK(std::make_pair(start["pid"].get<int>(), start["tid"].get<int>()) == thread_of[4]);
  CHECK(std::make_pair(end["pid"].get<int>(), end["tid"].get<int>()) == thread_of[9]);
  CHECK(end["bp"] == "e");
  // Each inside its own slice.
  CHECK(start["ts"].get<double>() > 1.0e6);
  CHECK(start["ts"].get<double>() < 2.0e6);
  CHECK(end["ts"].get<double>() > 1.5e6);
  CHECK(end["ts"].get<double>() < 2.0e6);
  // Reading it back keeps the pairing and ignores the arrows.
  const auto path = std::filesystem::temp_directory_path() / "hetsim_flow_test.json";
  write_chrome_trace(t, path.string());
  const Trace back = read_chrome_trace(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.events.size() == 3);
  for (const TraceEvent& e : back.events)
    CHECK(e.match == (e.task_id == 4 ? 9 : e.task_id == 9 ? 4 : -1));
}

TEST_CASE("--trace-devices: a list of ids and ranges, and the trace kept to them")
{
  CHECK(parse_device_list("0,8-10,3,9", 16, "--trace-devices") == std::vector<int>{0, 3, 8, 9, 10});
  for (const char* bad : {"", "1,,2", "16", "3-1", "-1", "1-", "a", "2-3-4", "99999999999", "1 "})
    CHECK_THROWS_WITH_AS(parse_device_list(bad, 16, "--trace-devices"),
                         doctest::Contains("--trace-devices: expected device ids or ranges such as 0,4-7, each below 16"),
                         hetsim::InputError);
  Trace t;
  t.device_labels = {"d0", "d1", "d2"};
  t.events  = {make_event(1, "a", "forward", "compute", 0, 0, 1, 0, 1), make_event(2, "b", "forward", "compute", 1, 0, 1, 0, 1),
               make_event(3, "c", "forward", "compute", 2, 0, 1, 0, 1)};
  t.kernels = {KernelEvent{2, 1, "k", 0, 1}, KernelEvent{3, 2, "k", 0, 1}};
  keep_devices(t, {0, 2});
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].device == 0);
  CHECK(t.events[1].device == 2);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].device == 2);
  CHECK(t.device_labels.size() == 3);
}
