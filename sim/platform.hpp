#pragma once
/// The SimGrid platform of a Cluster, built programmatically with nested zones (see core/cluster.hpp for the model).
///
///  - top zone (full routing): one zone per region, joined by one directional WAN link per ordered region pair
///    (FATPIPE when the cluster's wan_sharing is per_flow, shared otherwise);
///  - region zone: a star of node zones; each node's NIC is a split-duplex link. Each ordered node pair with an
///    override gets its own link, used through a SimGrid bypass route (NIC up, override link, NIC down), so a
///    region with overrides needs no full routing table;
///  - node zone: a star of device hosts, each with a split-duplex port link (bandwidth `intra`, latency `intra`/2).
///
/// Latencies: a port adds intra/2 per traversal and a NIC nic/2, so two devices of one node see `intra` and two
/// nodes of one region intra + nic + the region's switch latency. In a star region the switch latency rides on
/// the NICs (region.latency/2 up and down) and is subtracted from the WAN links (core::check_cluster_complete
/// guarantees that stays >= 0). In a region with overrides the NICs carry nic/2 only and two FATPIPE links
/// (switch up and switch down, region.latency/2 each) carry the switch latency on the routes that cross the
/// switch, so an override faster than the switch stays representable. Unlimited bandwidths (an override without one) become
/// kUnlimitedBandwidth bytes/s.
///
/// Must be built inside a sim::Engine (see engine.hpp).

#include "core/cluster.hpp"

#include <memory>
#include <unordered_map>
#include <vector>

namespace simgrid::s4u {
class Host;
class NetZone;
} // namespace simgrid::s4u
namespace simgrid::kernel::routing {
class NetPoint;
} // namespace simgrid::kernel::routing

namespace hetsim::sim {

/// Stand-in for an infinite bandwidth (1 PB/s): SimGrid needs finite link capacities.
inline constexpr double kUnlimitedBandwidth = 1e15;

class Platform {
public:
  /// Builds the platform in the current engine; throws InputError (from check_cluster_complete) for an
  /// incomplete cluster.
  explicit Platform(const Cluster& cluster);
  Platform(const Platform&)            = delete;
  Platform& operator=(const Platform&) = delete;

  const Cluster& cluster() const { return cluster_; }
  simgrid::s4u::Host* host(int device) const { return hosts_[device]; }
  /// Links created (split-duplex links count twice).
  std::size_t link_count() const { return link_count_; }

  /// Latency (sum of link latencies) and bottleneck bandwidth of SimGrid's route from one device to another;
  /// a bandwidth of kUnlimitedBandwidth or more reads as infinity. Link{} when src == dst.
  Link route(int src, int dst) const;
  /// Route latency, cached per device pair (the replay asks for it before every transfer).
  double latency(int src, int dst) const;

private:
  void build_region(int region, simgrid::s4u::NetZone* top);

  const Cluster& cluster_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::s4u::NetZone*> region_zones_;
  std::vector<simgrid::kernel::routing::NetPoint*> region_gateways_;
  std::size_t link_count_ = 0;
  mutable std::unordered_map<long long, double> latency_cache_;
};

} // namespace hetsim::sim
