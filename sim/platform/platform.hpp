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
#include "sim/platform/slowdowns.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace simgrid::s4u {
class Host;
class Link;
class NetZone;
class SplitDuplexLink;
} // namespace simgrid::s4u
namespace simgrid::kernel::routing {
class NetPoint;
} // namespace simgrid::kernel::routing

namespace hetsim::sim {

/// Every host's speed. Compute tasks sleep their duration, except on a device under a speed profile
/// (slowdowns.hpp), where they execute duration x this many flops.
inline constexpr double kHostSpeedFlops = 1e12;
/// Stand-in for an infinite bandwidth (1 PB/s): SimGrid needs finite link capacities.
inline constexpr double kUnlimitedBandwidth = 1e15;

/// What a link of the platform is, for reports: a device's port to its node switch (NVLink, PCIe), a node's NIC,
/// a WAN link between two regions, a node pair's own link, or a region switch's latency (no bandwidth limit).
enum class LinkKind { port, nic, wan, node_pair, switch_latency };
std::string_view link_kind_name(LinkKind kind);

/// One directional link (a split-duplex link is two: out of and into its device or node).
struct PlatformLink {
  const simgrid::s4u::Link* link = nullptr; ///< nullptr for the port or NIC of a node not built
  LinkKind kind                  = LinkKind::port;
  std::string label; ///< in the cluster's names: "dev5 port out", "node a100-3 NIC in", "WAN us-east -> eu-west"
  double bandwidth_bytes_per_s = 0; ///< kUnlimitedBandwidth or more reads as unlimited
};

class Platform {
public:
  /// Builds the platform in the current engine; throws InputError (from check_cluster_complete) for an
  /// incomplete cluster. With `built_nodes` (one flag per node), only those nodes get hosts and links in SimGrid:
  /// a folded replay touches a few nodes of thousands, and SimGrid's cost of creating a host or link grows with
  /// the zones already made. The others keep their entries in links() (with no SimGrid link) and have no host.
  /// `slowdowns` (slowdowns.hpp) become speed and bandwidth profiles of the hosts and links they name.
  explicit Platform(const Cluster& cluster, const std::vector<char>& built_nodes = {},
                    const std::vector<Slowdown>& slowdowns = {});
  Platform(const Platform&)            = delete;
  Platform& operator=(const Platform&) = delete;

  const Cluster& cluster() const { return cluster_; }
  /// The slowdowns its hosts and links were built with.
  const std::vector<Slowdown>& slowdowns() const { return slowdowns_; }
  /// The device's host; nullptr for a device of a node not built.
  simgrid::s4u::Host* host(int device) const { return hosts_[device]; }
  /// Links created (split-duplex links count twice).
  std::size_t link_count() const { return links_.size(); }
  const std::vector<PlatformLink>& links() const { return links_; }
  /// Indices into links() of a device's port, a node's NIC (out of it, or into it) and a WAN link (-1 when the
  /// regions are the same).
  int port_link(int device, bool in) const { return port_links_[2 * device + (in ? 1 : 0)]; }
  int nic_link(int node, bool in) const { return nic_links_[2 * node + (in ? 1 : 0)]; }
  int wan_link(int src_region, int dst_region) const;
  /// Indices into links() of SimGrid's route from one device to another, in order; empty when src == dst.
  std::vector<int> route_links(int src, int dst) const;

  /// Latency (sum of link latencies) and bottleneck bandwidth of SimGrid's route from one device to another;
  /// a bandwidth of kUnlimitedBandwidth or more reads as infinity. Link{} when src == dst.
  Link route(int src, int dst) const;
  /// Route latency, cached per device pair (the replay asks for it before every transfer).
  double latency(int src, int dst) const;

private:
  void build_region(int region, simgrid::s4u::NetZone* top);
  /// Appends a link's entry to links(); `link` is nullptr for a node not built, which has `unbuilt_bandwidth`.
  void add_link(const simgrid::s4u::Link* link, LinkKind kind, std::string label, double unbuilt_bandwidth = 0);
  /// Appends the entries of a split-duplex link ("<name> out", "<name> in"; nullptr for a node not built) and
  /// records their indices at indices[2 * at] and indices[2 * at + 1].
  void add_duplex(std::vector<int>& indices, int at, const simgrid::s4u::SplitDuplexLink* duplex, LinkKind kind,
                  const std::string& name, double unbuilt_bandwidth = 0);
  /// A node that is not built: its ports' and NIC's entries in links() only.
  void add_unbuilt_node(int n);

  const Cluster& cluster_;
  std::vector<char> built_nodes_; ///< per node; empty: all
  std::vector<Slowdown> slowdowns_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::s4u::NetZone*> region_zones_;
  std::vector<simgrid::kernel::routing::NetPoint*> region_gateways_;
  std::vector<PlatformLink> links_;
  std::vector<int> port_links_; ///< per device: out, in
  std::vector<int> nic_links_;  ///< per node: out, in
  std::vector<int> wan_links_;  ///< per ordered region pair (src * regions + dst); -1 on the diagonal
  std::unordered_map<const simgrid::s4u::Link*, int> link_index_;
  mutable std::unordered_map<long long, double> latency_cache_;
};

} // namespace hetsim::sim
