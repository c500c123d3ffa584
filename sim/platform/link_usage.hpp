#pragma once
/// What each link of the platform carried during a replay: the bytes that crossed it and how long at least one
/// flow was on it (its busy time), for the report's busiest links.
///
/// Flows report their interval when they end, and SimGrid tells an asynchronous flow's end only when its sender
/// waits for it, so intervals arrive out of order. Each link keeps the intervals it has not settled yet; an
/// interval is settled (its length added to the busy time, overlaps merged) once it ends before the earliest
/// start of any flow still in flight, since no interval reported later can reach back before that.

#include "sim/platform/platform.hpp"

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hetsim::strategies {
struct Fold;
}

namespace hetsim::sim {

/// One link's totals over a replay.
struct LinkUsage {
  std::string label;
  LinkKind kind                = LinkKind::port;
  double bandwidth_bytes_per_s = 0;
  double bytes                 = 0;
  double busy_s                = 0;
};

class LinkUsageRecorder {
public:
  explicit LinkUsageRecorder(const Platform& platform);

  /// A flow of `bytes` from device src to dst starts at `start_s`; returns a handle for flow_ended.
  struct FlowHandle {
    std::multiset<double>::iterator start;
    std::size_t logged = 0; ///< its place in the flow log, when flows are kept
  };
  FlowHandle flow_started(int src, int dst, double bytes, double start_s);
  /// The flow started as `handle` moved its bytes from its start to `end_s`.
  void flow_ended(FlowHandle handle, int src, int dst, double end_s);

  /// Every link's totals, in Platform::links() order; call once all flows have ended.
  std::vector<LinkUsage> totals();

  /// Keep every flow from now on, so that usage_between can be asked once the replay has ended.
  void keep_flows() { keep_flows_ = true; }
  /// Every link's usage within [from_s, to_s), in Platform::links() order: each flow's bytes in proportion to its
  /// time inside it, and the time at least one flow was on the link in it. Needs keep_flows() before the replay.
  std::vector<LinkUsage> usage_between(double from_s, double to_s);

private:
  using Interval = std::pair<double, double>;
  const std::vector<int>& route(int src, int dst);
  /// Merges a link's unsettled intervals and settles those that end at or before `horizon_s`.
  void settle(int link, double horizon_s);

  const Platform& platform_;
  std::vector<double> bytes_;
  std::vector<double> busy_s_;
  std::vector<std::vector<Interval>> unsettled_;
  std::multiset<double> in_flight_starts_;
  std::unordered_map<long long, std::vector<int>> routes_;
  struct LoggedFlow {
    int src = 0, dst = 0;
    double bytes = 0, start_s = 0, end_s = 0;
  };
  bool keep_flows_ = false;
  std::vector<LoggedFlow> flows_;
};

/// Adds `repeats` times `window`'s bytes and busy time to `usage` (both in Platform::links() order): a stretch of
/// the replay that the iteration runs that many more times (sim/simulate/steady_state.hpp).
void add_repeated(std::vector<LinkUsage>& usage, const std::vector<LinkUsage>& window, int repeats);

/// The usage a full replay would have recorded, from a folded one on `platform` (strategies/lowering/fold.hpp):
/// a NIC or WAN link replayed at 1/c of its bandwidth carried c times the bytes at its own bandwidth, and the
/// ports and NICs of devices and nodes nothing was replayed on were as busy as their representatives'.
void unfold_link_usage(const Platform& platform, const strategies::Fold& fold, std::vector<LinkUsage>& usage);

/// LinkUsage as bytes (to carry it across run_isolated) and back.
std::string link_usage_to_bytes(const std::vector<LinkUsage>& usage);
std::vector<LinkUsage> link_usage_from_bytes(std::string_view bytes);

} // namespace hetsim::sim
