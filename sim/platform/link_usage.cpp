#include "sim/platform/link_usage.hpp"

#include "strategies/lowering/fold.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hetsim::sim {
namespace {

/// A link's unsettled intervals are merged once there are this many (amortises the sort).
constexpr std::size_t kSettleEvery = 64;

template <class T> void put(std::string& out, const T& value)
{
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T> T take(std::string_view& in)
{
  T value{};
  if (in.size() < sizeof value)
    throw InternalError("link usage: truncated result from the simulation process");
  std::memcpy(&value, in.data(), sizeof value);
  in.remove_prefix(sizeof value);
  return value;
}

/// Sorts `intervals` and merges those that overlap or touch, in place: what a link was busy for.
void merge_intervals(std::vector<std::pair<double, double>>& intervals)
{
  std::sort(intervals.begin(), intervals.end());
  std::size_t kept = 0;
  for (const auto& interval : intervals) {
    if (kept > 0 && interval.first <= intervals[kept - 1].second)
      intervals[kept - 1].second = std::max(intervals[kept - 1].second, interval.second);
    else
      intervals[kept++] = interval;
  }
  intervals.resize(kept);
}

} // namespace

LinkUsageRecorder::LinkUsageRecorder(const Platform& platform)
    : platform_(platform), bytes_(platform.links().size(), 0.0), busy_s_(platform.links().size(), 0.0),
      unsettled_(platform.links().size())
{
}

const std::vector<int>& LinkUsageRecorder::route(int src, int dst)
{
  const long long key = static_cast<long long>(src) * platform_.cluster().device_count() + dst;
  auto it             = routes_.find(key);
  if (it == routes_.end())
    it = routes_.emplace(key, platform_.route_links(src, dst)).first;
  return it->second;
}

LinkUsageRecorder::FlowHandle LinkUsageRecorder::flow_started(int src, int dst, double bytes, double start_s)
{
  for (int link : route(src, dst))
    bytes_[link] += bytes;
  FlowHandle handle{in_flight_starts_.insert(start_s), flows_.size()};
  if (keep_flows_)
    flows_.push_back(LoggedFlow{src, dst, bytes, start_s, start_s});
  return handle;
}

void LinkUsageRecorder::flow_ended(FlowHandle handle, int src, int dst, double end_s)
{
  const double start_s = *handle.start;
  in_flight_starts_.erase(handle.start);
  if (keep_flows_ && handle.logged < flows_.size())
    flows_[handle.logged].end_s = end_s;
  if (end_s <= start_s)
    return;
  const double horizon_s = in_flight_starts_.empty() ? end_s : std::min(*in_flight_starts_.begin(), end_s);
  for (int link : route(src, dst)) {
    unsettled_[link].emplace_back(start_s, end_s);
    if (unsettled_[link].size() >= kSettleEvery)
      settle(link, horizon_s);
  }
}

void LinkUsageRecorder::settle(int link, double horizon_s)
{
  auto& intervals = unsettled_[link];
  merge_intervals(intervals);
  std::vector<Interval> merged;
  merged.swap(intervals);
  for (const auto& [start_s, end_s] : merged) {
    if (end_s <= horizon_s)
      busy_s_[link] += end_s - start_s;
    else
      intervals.emplace_back(start_s, end_s);
  }
}

std::vector<LinkUsage> LinkUsageRecorder::totals()
{
  std::vector<LinkUsage> usage;
  const auto& links = platform_.links();
  usage.reserve(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) {
    settle(static_cast<int>(i), std::numeric_limits<double>::infinity());
    usage.push_back(LinkUsage{links[i].label, links[i].kind, links[i].bandwidth_bytes_per_s, bytes_[i], busy_s_[i]});
  }
  return usage;
}

std::vector<LinkUsage> LinkUsageRecorder::usage_between(double from_s, double to_s)
{
  if (!keep_flows_)
    throw InternalError("link usage: usage_between without keep_flows");
  const auto& links = platform_.links();
  std::vector<double> bytes(links.size(), 0.0);
  std::vector<std::vector<Interval>> on_link(links.size());
  for (const LoggedFlow& flow : flows_) {
    const auto& links_crossed = route(flow.src, flow.dst);
    const double lo = std::max(flow.start_s, from_s), hi = std::min(flow.end_s, to_s);
    // A flow's bytes in the share of its time inside the window: over a window one period long, a flow repeated
    // every period then counts once whatever its phase, with no flow on an edge to count twice or miss.
    const double inside = flow.end_s > flow.start_s ? std::max(0.0, hi - lo) / (flow.end_s - flow.start_s)
                                                    : (flow.start_s >= from_s && flow.start_s < to_s ? 1.0 : 0.0);
    for (int link : links_crossed)
      bytes[link] += inside * flow.bytes;
    if (hi > lo)
      for (int link : links_crossed)
        on_link[link].emplace_back(lo, hi);
  }
  std::vector<LinkUsage> usage;
  usage.reserve(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) {
    merge_intervals(on_link[i]);
    double busy_s = 0;
    for (const auto& [start_s, end_s] : on_link[i])
      busy_s += end_s - start_s;
    usage.push_back(LinkUsage{links[i].label, links[i].kind, links[i].bandwidth_bytes_per_s, bytes[i], busy_s});
  }
  return usage;
}

void add_repeated(std::vector<LinkUsage>& usage, const std::vector<LinkUsage>& window, int repeats)
{
  if (usage.size() != window.size())
    throw InternalError("link usage: a repeated window of another platform");
  for (std::size_t i = 0; i < usage.size(); ++i) {
    usage[i].bytes += repeats * window[i].bytes;
    usage[i].busy_s += repeats * window[i].busy_s;
  }
}

std::string link_usage_to_bytes(const std::vector<LinkUsage>& usage)
{
  std::string out;
  put(out, static_cast<std::uint64_t>(usage.size()));
  for (const auto& link : usage) {
    put(out, static_cast<std::uint64_t>(link.label.size()));
    out += link.label;
    put(out, static_cast<std::int32_t>(link.kind));
    put(out, link.bandwidth_bytes_per_s);
    put(out, link.bytes);
    put(out, link.busy_s);
  }
  return out;
}

std::vector<LinkUsage> link_usage_from_bytes(std::string_view bytes)
{
  std::vector<LinkUsage> usage(take<std::uint64_t>(bytes));
  for (auto& link : usage) {
    const auto length = take<std::uint64_t>(bytes);
    if (bytes.size() < length)
      throw InternalError("link usage: truncated result from the simulation process");
    link.label = std::string(bytes.substr(0, length));
    bytes.remove_prefix(length);
    link.kind                  = static_cast<LinkKind>(take<std::int32_t>(bytes));
    link.bandwidth_bytes_per_s = take<double>(bytes);
    link.bytes                 = take<double>(bytes);
    link.busy_s                = take<double>(bytes);
  }
  return usage;
}

void unfold_link_usage(const Platform& platform, const strategies::Fold& fold, std::vector<LinkUsage>& usage)
{
  const Cluster& cluster = platform.cluster();
  // A link that carried c real flows per replayed one moved c times the bytes; a narrowed one (all but a WAN link
  // shared per flow) gets its own bandwidth back.
  const auto widen = [&](int link, double copies, bool narrowed) {
    if (link < 0 || copies == 1)
      return;
    usage[link].bytes *= copies;
    if (narrowed)
      usage[link].bandwidth_bytes_per_s *= copies;
  };
  const auto copy = [&](int link, int from) {
    usage[link].bytes  = usage[from].bytes;
    usage[link].busy_s = usage[from].busy_s;
  };
  std::vector<int> node_standing(cluster.nodes().size(), -1); // the node whose NIC stands for each node's
  for (int d = 0; d < cluster.device_count(); ++d) {
    const int representative = fold.representative[d];
    if (representative < 0)
      continue;
    node_standing[cluster.device(d).node] = cluster.device(representative).node;
  }
  for (std::size_t n = 0; n < node_standing.size(); ++n)
    for (bool in : {false, true})
      widen(platform.nic_link(static_cast<int>(n), in), fold.nic_divisor[n], true);
  for (std::size_t a = 0; a < fold.wan_divisor.size(); ++a)
    for (std::size_t b = 0; b < fold.wan_divisor.size(); ++b)
      if (a != b)
        widen(platform.wan_link(static_cast<int>(a), static_cast<int>(b)), fold.wan_divisor[a][b],
              cluster.wan_sharing() == WanSharing::shared);
  for (int d = 0; d < cluster.device_count(); ++d)
    if (fold.representative[d] >= 0 && fold.representative[d] != d)
      for (bool in : {false, true})
        copy(platform.port_link(d, in), platform.port_link(fold.representative[d], in));
  for (std::size_t n = 0; n < node_standing.size(); ++n)
    if (node_standing[n] >= 0 && node_standing[n] != static_cast<int>(n))
      for (bool in : {false, true}) {
        copy(platform.nic_link(static_cast<int>(n), in), platform.nic_link(node_standing[n], in));
        usage[platform.nic_link(static_cast<int>(n), in)].bandwidth_bytes_per_s =
            usage[platform.nic_link(node_standing[n], in)].bandwidth_bytes_per_s;
      }
}

} // namespace hetsim::sim
