#pragma once
/// Point-to-point transfers between devices over the SimGrid platform: every collective and every pipeline
/// send/recv ends up here.
///
/// A transfer first waits its route's latency (SimGrid is configured not to pay latencies itself; see engine.hpp)
/// and then moves its bytes as one SimGrid flow, which shares every link of the route max-min fairly with all
/// other flows in flight. A lone transfer of S bytes thus takes latency + S / bottleneck bandwidth. Calls block
/// the calling actor.

#include "sim/platform.hpp"

#include <vector>

namespace hetsim::sim {

class Network {
public:
  explicit Network(const Platform& platform) : platform_(platform) {}

  struct Flow {
    int src      = 0;
    int dst      = 0;
    double bytes = 0;
  };

  /// One transfer from device `src` to device `dst` (nothing when src == dst).
  void transfer(int src, int dst, double bytes) const;
  /// Several transfers at once: each flow starts after its own route latency; returns when all have arrived.
  void transfer_all(std::vector<Flow> flows) const;

  const Platform& platform() const { return platform_; }

private:
  const Platform& platform_;
};

} // namespace hetsim::sim
