#include "core/error.hpp"
#include "costmodel/calibration.hpp"
#include "traces/calibrate.hpp"
#include "traces/trace.hpp"
#include "traces/validate.hpp"

#include "trace_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>

using namespace hetsim::traces;
using hetsim::traces::testing::make_event;

namespace {

constexpr double kPeak = 2e12;

double known_efficiency(double tokens)
{
  return 0.7 * tokens / (tokens + 600);
}

/// A trace with compute events following known_efficiency, sends and ring collectives following the given α/β
/// per link class, with a known per-collective overhead and ±0.5% deterministic noise so that the fit has something to average.
Trace synthetic_trace(unsigned seed)
{
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> noise(0.995, 1.005);
  Trace trace;
  trace.source  = "cpu";
  trace.devices = {{"cpu", kPeak}, {"cpu", kPeak}, {"cpu", kPeak}, {"cpu", kPeak}};
  int id          = 0;
  int collectives = 0;
  double now      = 0;
  auto add      = [&](TraceEvent e, double seconds) {
    e.task_id = id++;
    e.start_s = now;
    e.end_s   = now + seconds * noise(random);
    now       = e.end_s;
    trace.events.push_back(e);
  };
  for (double tokens : {128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0})
    for (int k = 0; k < 3; ++k) {
      TraceEvent e;
      e.kind   = k == 0 ? "forward" : "backward";
      e.device = k;
      e.tokens = tokens;
      e.flops  = 1e9 * tokens;
      add(e, e.flops / (kPeak * known_efficiency(tokens)));
    }
  struct Class {
    const char* name;
    double alpha, beta, overhead;
  };
  for (const Class& c : {Class{"inter_node", 2e-4, 8e-9, 1e-3}, Class{"inter_region", 5e-3, 8e-8, 4e-3}}) {
    for (double bytes : {1e4, 1e5, 1e6, 4e6}) {
      TraceEvent send;
      send.kind  = "send";
      send.link  = c.name;
      send.bytes = bytes;
      add(send, c.alpha + c.beta * bytes);
      // A ring all-reduce over 4 members: the last member to arrive spans exactly 2(n-1) steps; the others waited.
      for (int member = 0; member < 4; ++member) {
        TraceEvent ar;
        ar.kind       = "all_reduce";
        ar.link       = c.name;
        ar.bytes      = 2 * bytes;
        ar.members    = 4;
        ar.collective = collectives; // one collective, four member events
        ar.device     = member;
        add(ar, c.overhead + 6 * (c.alpha + c.beta * 2 * bytes / 4) + (member == 2 ? 0 : 0.05));
      }
      ++collectives;
    }
  }
  return trace;
}

} // namespace

TEST_CASE("calibration recovers known link alpha/beta and an efficiency curve within 2%")
{
  const auto calibration = calibrate({synthetic_trace(1), synthetic_trace(2)});
  REQUIRE(calibration.links.count("inter_node") == 1);
  REQUIRE(calibration.links.count("inter_region") == 1);
  CHECK(calibration.links.at("inter_node").alpha_s == doctest::Approx(2e-4).epsilon(0.02).scale(0));
  CHECK(calibration.links.at("inter_node").beta_seconds_per_byte == doctest::Approx(8e-9).epsilon(0.02).scale(0));
  CHECK(calibration.links.at("inter_region").alpha_s == doctest::Approx(5e-3).epsilon(0.02).scale(0));
  CHECK(calibration.links.at("inter_region").beta_seconds_per_byte == doctest::Approx(8e-8).epsilon(0.02).scale(0));
  CHECK(calibration.links.at("inter_node").collective_overhead_s == doctest::Approx(1e-3).epsilon(0.02).scale(0));
  CHECK(calibration.links.at("inter_region").collective_overhead_s == doctest::Approx(4e-3).epsilon(0.02).scale(0));

  REQUIRE(calibration.efficiency_points.count("cpu") == 1);
  CHECK(calibration.efficiency_points.at("cpu").size() == 6);
  // Between the measured sizes too: the monotone spline through the fitted points follows the curve.
  for (double tokens : {128.0, 300.0, 700.0, 1500.0, 3000.0, 4096.0})
    CHECK(calibration.efficiency("cpu", tokens) == doctest::Approx(known_efficiency(tokens)).epsilon(0.02).scale(0));
}

TEST_CASE("calibration survives its own JSON and refuses traces with nothing to fit")
{
  const auto calibration = calibrate({synthetic_trace(3)});
  const auto back        = hetsim::costmodel::calibration_from_json(hetsim::costmodel::calibration_to_json(calibration), "t");
  CHECK(back.links.at("inter_region").beta_seconds_per_byte ==
        doctest::Approx(calibration.links.at("inter_region").beta_seconds_per_byte));
  Trace bare;
  bare.events.push_back(make_event(0, "fwd", "forward", "compute", 0, 0, 1, 0, 0));
  CHECK_THROWS_AS(calibrate({bare}), hetsim::InputError);
}

TEST_CASE("a link class whose transfers do not grow with size is left out, not fitted to nonsense")
{
  Trace trace;
  for (int i = 0; i < 4; ++i) {
    TraceEvent e;
    e.task_id = i;
    e.kind    = "send";
    e.link    = "inter_node";
    e.bytes   = 1e3 * (i + 1);
    e.end_s   = 1e-3 * (4 - i); // larger messages finishing sooner: no positive β
    trace.events.push_back(e);
  }
  std::vector<std::string> skipped;
  const auto calibration = calibrate({trace}, &skipped);
  CHECK(calibration.links.empty());
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].find("inter_node") != std::string::npos);
}

TEST_CASE("annotations for calibration round-trip through the chrome trace")
{
  Trace t = synthetic_trace(4);
  const auto path = std::filesystem::temp_directory_path() / "hetsim_calibrate_round_trip.json";
  write_chrome_trace(t, path.string());
  const Trace back = read_chrome_trace(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.devices.size() == 4);
  CHECK(back.devices[2].gpu == "cpu");
  CHECK(back.devices[2].peak_flops == kPeak);
  const auto a = calibrate({t});
  const auto b = calibrate({back});
  CHECK(a.links.at("inter_node").alpha_s == doctest::Approx(b.links.at("inter_node").alpha_s));
  CHECK(a.efficiency_points.at("cpu") == b.efficiency_points.at("cpu"));
}

TEST_CASE("spearman: identical order 1, reversed -1, ties averaged")
{
  CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1));
  CHECK(spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1));
  CHECK(spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}) == doctest::Approx(0.8));
  CHECK(spearman({1, 1, 2}, {1, 2, 3}) == doctest::Approx(0.8660254).epsilon(1e-6));
  CHECK(spearman({1, 1, 1}, {1, 2, 3}) == 0);
}

TEST_CASE("compare_traces: iteration and per-kind errors, and traces of different plans are refused")
{
  Trace measured, predicted;
  measured.events  = {make_event(0, "a", "forward", "compute", 0, 0, 1, 0, 0), make_event(1, "b", "send", "pipeline", 0, 1, 2, 0, 0)};
  predicted.events = {make_event(0, "a", "forward", "compute", 0, 0, 1.1, 0, 0), make_event(1, "b", "send", "pipeline", 0, 1.1, 2.2, 0, 0)};
  const Comparison c = compare_traces(measured, predicted);
  CHECK(c.iteration_error == doctest::Approx(0.1));
  CHECK(c.by_kind.at("forward").median_abs_error == doctest::Approx(0.1));
  CHECK(c.by_kind.at("send").median_abs_error == doctest::Approx(0.1));
  predicted.events.pop_back();
  CHECK_THROWS_AS(compare_traces(measured, predicted), hetsim::InputError);
}

TEST_CASE("compare_traces: a task that moved other bytes than predicted is refused (another plan or --scale)")
{
  Trace measured, predicted;
  measured.events  = {make_event(0, "send a", "send", "pipeline", 0, 0, 1, 250, 0)};
  predicted.events = {make_event(0, "send a", "send", "pipeline", 0, 0, 1, 1000, 0)};
  CHECK_THROWS_WITH_AS(compare_traces(measured, predicted),
                       doctest::Contains("task 0 'send a' moved 250 bytes in the measured trace but 1000"),
                       hetsim::InputError);
  predicted.events[0].bytes = 250;
  CHECK_NOTHROW(compare_traces(measured, predicted));
  measured.events[0].bytes  = 0; // unknown: not compared
  predicted.events[0].bytes = 1000;
  CHECK_NOTHROW(compare_traces(measured, predicted));
}
