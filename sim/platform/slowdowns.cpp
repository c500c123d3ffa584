#include "sim/platform/slowdowns.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_input.hpp"

#include <simgrid/kernel/ProfileBuilder.hpp>

#include <cmath>
#include <cstdio>
#include <limits>

namespace hetsim::sim {
namespace {

// Simulated seconds: windows end before 1e9 s (beyond any iteration) and are told apart to the nanosecond. The
// bounds keep the profile's numbers normal doubles: SimGrid's reader (std::stod) refuses subnormal ones.
constexpr double kLongestWindowS = 1e9, kShortestTimeS = 1e-9;
// A part at less than a millionth of its peak is down, not slow.
constexpr double kSlowestFactor = 1e-6;

/// A window's start or end: 0 (only a start), or between a nanosecond and 1e9 s.
double window_time(const JsonInput& value, bool may_be_zero)
{
  const double t = may_be_zero ? value.non_negative_number() : value.positive_number();
  if ((t != 0 && t < kShortestTimeS) || t > kLongestWindowS)
    value.fail(std::string(may_be_zero ? "0 or " : "") + "seconds from 1e-9 to 1e9");
  return t;
}

/// The window and factor of one entry; `factor_key` is "speed" or "rate".
Slowdown read_window(const JsonInput& entry, const char* factor_key)
{
  Slowdown s;
  const JsonInput factor = entry.at(factor_key);
  s.factor               = factor.positive_number();
  if (s.factor > 1 || s.factor < kSlowestFactor)
    factor.fail("a fraction of the peak from 1e-6 to 1");
  if (const auto from = entry.find("from_s"))
    s.from_s = window_time(*from, true);
  s.until_s = std::numeric_limits<double>::infinity();
  if (const auto until = entry.find("until_s")) {
    s.until_s = window_time(*until, false);
    if (s.until_s <= s.from_s)
      until->fail("an end after from_s (" + std::to_string(s.from_s) + ")");
  }
  return s;
}

std::string window_text(const Slowdown& s)
{
  char text[96];
  if (std::isinf(s.until_s))
    std::snprintf(text, sizeof text, " at %gx from %g s", s.factor, s.from_s);
  else
    std::snprintf(text, sizeof text, " at %gx from %g s to %g s", s.factor, s.from_s, s.until_s);
  return text;
}

} // namespace

std::vector<Slowdown> load_slowdowns(const std::string& file, const Cluster& cluster)
{
  const nlohmann::json json = JsonInput::parse_text(read_input_file(file), file);
  const JsonInput root(json, file);
  root.allow_only({"description", "devices", "nics", "region_links"});
  std::vector<Slowdown> slowdowns;
  // Each list's entries: the window, then what it names.
  auto read_list = [&](const char* list, const char* factor_key, std::initializer_list<std::string_view> fields,
                       auto name_part) {
    if (const auto entries = root.find(list))
      for (const JsonInput& entry : entries->elements()) {
        entry.allow_only(fields);
        Slowdown s = read_window(entry, factor_key);
        name_part(entry, s);
        slowdowns.push_back(s);
      }
  };
  read_list("devices", "speed", {"device", "speed", "from_s", "until_s"}, [&](const JsonInput& entry, Slowdown& s) {
    s.part                 = Slowdown::Part::device;
    const JsonInput device = entry.at("device");
    s.first                = device.non_negative_int();
    if (s.first >= cluster.device_count())
      device.fail("a device of the cluster's " + std::to_string(cluster.device_count()));
    s.label = "dev" + std::to_string(s.first) + " (" + cluster.gpu_of(s.first).name + ")" + window_text(s);
  });
  read_list("nics", "rate", {"node", "rate", "from_s", "until_s"}, [&](const JsonInput& entry, Slowdown& s) {
    s.part  = Slowdown::Part::nic;
    s.first = cluster_node_index(entry.at("node"), cluster);
    s.label = "node " + cluster.nodes()[s.first].name + " NIC" + window_text(s);
  });
  read_list("region_links", "rate", {"between", "rate", "from_s", "until_s"}, [&](const JsonInput& entry, Slowdown& s) {
    s.part                  = Slowdown::Part::region_link;
    const JsonInput between = entry.at("between");
    if (!between.is_array() || between.size() != 2)
      between.fail("two region names");
    s.first  = cluster_region_index(between.at(std::size_t{0}), cluster);
    s.second = cluster_region_index(between.at(std::size_t{1}), cluster);
    if (s.first == s.second)
      between.fail("two different regions");
    s.label = "link " + cluster.regions()[s.first].name + " <-> " + cluster.regions()[s.second].name + window_text(s);
  });
  // SimGrid takes one profile per host or link.
  for (std::size_t i = 0; i < slowdowns.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (slowdowns[i].part == slowdowns[j].part && slowdowns[i].first == slowdowns[j].first &&
          (slowdowns[i].second == slowdowns[j].second || slowdowns[i].second == slowdowns[j].first))
        throw InputError(file + ": " + slowdowns[i].label + " and " + slowdowns[j].label +
                         ": expected one window per device, NIC or region link");
  return slowdowns;
}

const Slowdown* find_slowdown(const std::vector<Slowdown>& slowdowns, Slowdown::Part part, int first, int second)
{
  for (const Slowdown& s : slowdowns)
    if (s.part == part && ((s.first == first && s.second == second) || (s.first == second && s.second == first)))
      return &s;
  return nullptr;
}

simgrid::kernel::profile::Profile* slowdown_profile(const Slowdown& s, const std::string& name, double peak)
{
  char line[80];
  std::string text;
  if (s.from_s > 0) {
    std::snprintf(line, sizeof line, "0 %.17g\n", peak);
    text += line;
  }
  std::snprintf(line, sizeof line, "%.17g %.17g\n", s.from_s, peak * s.factor);
  text += line;
  if (std::isfinite(s.until_s)) {
    std::snprintf(line, sizeof line, "%.17g %.17g\n", s.until_s, peak);
    text += line;
  }
  return simgrid::kernel::profile::ProfileBuilder::from_string(name, text, -1);
}

} // namespace hetsim::sim
