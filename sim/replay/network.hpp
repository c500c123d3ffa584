#pragma once
/// Point-to-point transfers between devices over the SimGrid platform: every collective and every pipeline
/// send/recv ends up here.
///
/// A transfer first waits its route's latency (SimGrid is configured not to pay latencies itself; see engine.hpp)
/// and then moves its bytes as one SimGrid flow, which shares every link of the route max-min fairly with all
/// other flows in flight. A lone transfer of S bytes thus takes latency + S / bottleneck bandwidth. Calls block
/// the calling actor.
///
/// Flows are mailbox messages to a per-device inbox with a permanent receiver (a daemon actor on the destination
/// host), so they start at once. Host-to-host comms (Comm::sendto) would be simpler, but in SimGrid 3.32 the cost
/// of completing one grows with the number in flight (a list scan in CommImpl::finish): 39 µs per transfer with
/// 4,096 concurrent flows against 11 µs for mailbox messages, which made large replays quadratic.

#include "sim/platform/link_usage.hpp"
#include "sim/platform/platform.hpp"

#include <vector>

namespace simgrid::s4u {
class Mailbox;
}

namespace hetsim::sim {

class Network {
public:
  /// Creates the inboxes of devices [0, device_count); call from maestro, before the engine runs.
  Network(const Platform& platform, int device_count);

  struct Flow {
    int src      = 0;
    int dst      = 0;
    double bytes = 0;
  };

  /// One transfer from device `src` to device `dst` (nothing when src == dst).
  void transfer(int src, int dst, double bytes) const;
  /// Several transfers at once: each flow starts after its own route latency; returns when all have arrived.
  void transfer_all(std::vector<Flow> flows) const;

  /// Waits until `end_s` as if a transfer of `bytes` from src to dst had the links until then: nothing moves,
  /// but the links' usage records it (a collective the cost model prices instead of flows).
  void occupy_until(int src, int dst, double bytes, double end_s) const;

  const Platform& platform() const { return platform_; }
  /// From now on, every flow's bytes and interval are added to `recorder` (which must outlive the transfers).
  void record_usage(LinkUsageRecorder* recorder) { usage_ = recorder; }

private:
  const Platform& platform_;
  LinkUsageRecorder* usage_ = nullptr;
  std::vector<simgrid::s4u::Mailbox*> inboxes_; ///< per device
};

} // namespace hetsim::sim
