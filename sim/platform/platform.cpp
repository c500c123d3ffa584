#include "sim/platform/platform.hpp"

#include "core/error.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace hetsim::sim {
namespace {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

double capacity(double bandwidth_bytes_per_s)
{
  return std::isfinite(bandwidth_bytes_per_s) ? std::min(bandwidth_bytes_per_s, kUnlimitedBandwidth)
                                              : kUnlimitedBandwidth;
}

/// `slowdown` (or nullptr): its bandwidth profile on both directions, set before the link is sealed.
sg4::SplitDuplexLink* split_duplex(sg4::NetZone* zone, const std::string& name, double bandwidth, double latency_s,
                                   const Slowdown* slowdown = nullptr)
{
  auto* link = zone->create_split_duplex_link(name, capacity(bandwidth));
  link->set_latency(latency_s);
  if (slowdown) {
    link->get_link_up()->set_bandwidth_profile(slowdown_profile(*slowdown, name + ".up", capacity(bandwidth)));
    link->get_link_down()->set_bandwidth_profile(slowdown_profile(*slowdown, name + ".down", capacity(bandwidth)));
  }
  link->seal();
  return link;
}

sg4::Link* simplex(sg4::NetZone* zone, const std::string& name, double bandwidth, double latency_s, bool fatpipe,
                   const Slowdown* slowdown = nullptr)
{
  auto* link = zone->create_link(name, capacity(bandwidth));
  link->set_latency(std::max(0.0, latency_s));
  if (fatpipe)
    link->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
  if (slowdown)
    link->set_bandwidth_profile(slowdown_profile(*slowdown, name, capacity(bandwidth)));
  link->seal();
  return link;
}

} // namespace

Platform::Platform(const Cluster& cluster, const std::vector<char>& built_nodes,
                   const std::vector<Slowdown>& slowdowns)
    : cluster_(cluster), built_nodes_(built_nodes), slowdowns_(slowdowns)
{
  HETSIM_ASSERT(built_nodes.empty() || built_nodes.size() == cluster.nodes().size());
  check_cluster_complete(cluster, "cluster '" + cluster.name() + "'");
  hosts_.resize(cluster.device_count(), nullptr);
  sg4::NetZone* top = sg4::create_full_zone("cluster");
  port_links_.assign(2 * static_cast<std::size_t>(cluster.device_count()), -1);
  nic_links_.assign(2 * cluster.nodes().size(), -1);
  wan_links_.assign(cluster.regions().size() * cluster.regions().size(), -1);
  region_zones_.resize(cluster.regions().size(), nullptr);
  region_gateways_.resize(cluster.regions().size(), nullptr);
  for (int r = 0; r < static_cast<int>(cluster.regions().size()); ++r)
    build_region(r, top);

  // One directional WAN link per ordered region pair; half of each region's switch latency is already on the way
  // into and out of the region.
  const auto& regions = cluster.regions();
  const bool per_flow = cluster.wan_sharing() == WanSharing::per_flow;
  for (int a = 0; a < static_cast<int>(regions.size()); ++a)
    for (int b = 0; b < static_cast<int>(regions.size()); ++b) {
      if (a == b)
        continue;
      const Link wan = cluster.inter_region(a, b);
      const double latency_s = wan.latency_s - (regions[a].latency_s + regions[b].latency_s) / 2;
      sg4::Link* link = simplex(top, "wan" + std::to_string(a) + "-" + std::to_string(b), wan.bandwidth_bytes_per_s,
                                latency_s, per_flow, find_slowdown(slowdowns_, Slowdown::Part::region_link, a, b));
      wan_links_[a * regions.size() + b] = static_cast<int>(links_.size());
      add_link(link, LinkKind::wan, "WAN " + regions[a].name + " -> " + regions[b].name);
      top->add_route(region_zones_[a]->get_netpoint(), region_zones_[b]->get_netpoint(),
                     region_gateways_[a], region_gateways_[b], {sg4::LinkInRoute(link)}, false);
    }
  top->seal();
}

void Platform::build_region(int r, sg4::NetZone* top)
{
  const Region& region = cluster_.regions()[r];
  const std::string region_name = "r" + std::to_string(r);
  sg4::NetZone* zone = sg4::create_star_zone(region_name);
  zone->set_parent(top);
  region_zones_[r] = zone;
  // The region's gateway sits in a zone of its own, at the same depth as the node zones: SimGrid's route
  // resolution (find_common_ancestors) goes wrong when a gateway is shallower than the host it is routed from.
  sg4::NetZone* uplink = sg4::create_star_zone(region_name + ".uplink");
  uplink->set_parent(zone);
  region_gateways_[r] = uplink->create_router(region_name + ".gw");
  uplink->seal();
  zone->add_route(uplink->get_netpoint(), nullptr, region_gateways_[r], nullptr, {}, true);

  bool has_overrides = false;
  for (const auto& o : cluster_.overrides())
    if (cluster_.nodes()[o.src_node].region == r)
      has_overrides = true;

  sg4::Link* switch_up   = nullptr;
  sg4::Link* switch_down = nullptr;
  if (has_overrides) {
    switch_up   = simplex(zone, region_name + ".switch_up", kUnlimitedBandwidth, region.latency_s / 2, true);
    switch_down = simplex(zone, region_name + ".switch_down", kUnlimitedBandwidth, region.latency_s / 2, true);
    add_link(switch_up, LinkKind::switch_latency, "region " + region.name + " switch up");
    add_link(switch_down, LinkKind::switch_latency, "region " + region.name + " switch down");
  }

  std::vector<NetPoint*> node_gateways(cluster_.nodes().size(), nullptr);
  std::vector<sg4::NetZone*> node_zones(cluster_.nodes().size(), nullptr);
  std::vector<sg4::SplitDuplexLink*> nics(cluster_.nodes().size(), nullptr);
  for (int n : region.nodes) {
    if (!has_overrides && !built_nodes_.empty() && !built_nodes_[n]) {
      add_unbuilt_node(n);
      continue;
    }
    const Node& node = cluster_.nodes()[n];
    const std::string node_name = "n" + std::to_string(n);
    sg4::NetZone* node_zone = sg4::create_star_zone(node_name);
    node_zone->set_parent(zone);
    NetPoint* gateway = node_zone->create_router(node_name + ".gw");
    for (int d : node.devices) {
      const std::string device_name = "d" + std::to_string(d);
      sg4::Host* host = node_zone->create_host(device_name, kHostSpeedFlops);
      if (const Slowdown* slowdown = find_slowdown(slowdowns_, Slowdown::Part::device, d))
        host->set_speed_profile(slowdown_profile(*slowdown, device_name + ".speed", 1));
      host->seal();
      hosts_[d] = host;
      auto* port = split_duplex(node_zone, device_name + ".port", node.intra.bandwidth_bytes_per_s,
                                node.intra.latency_s / 2);
      add_duplex(port_links_, d, port, LinkKind::port, "dev" + std::to_string(d) + " port");
      node_zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                           {sg4::LinkInRoute(port, sg4::LinkInRoute::Direction::UP)}, true);
    }
    node_zone->seal();

    const double nic_latency_s = has_overrides ? node.nic.latency_s / 2 : (node.nic.latency_s + region.latency_s) / 2;
    auto* nic = split_duplex(zone, node_name + ".nic", node.nic.bandwidth_bytes_per_s, nic_latency_s,
                             find_slowdown(slowdowns_, Slowdown::Part::nic, n));
    add_duplex(nic_links_, n, nic, LinkKind::nic, "node " + node.name + " NIC");
    nics[n]          = nic;
    node_gateways[n] = gateway;
    node_zones[n]    = node_zone;
    if (!has_overrides) {
      zone->add_route(node_zone->get_netpoint(), nullptr, gateway, nullptr,
                      {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, true);
    } else {
      zone->add_route(node_zone->get_netpoint(), nullptr, gateway, nullptr,
                      {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP), sg4::LinkInRoute(switch_up)}, false);
      zone->add_route(nullptr, node_zone->get_netpoint(), nullptr, gateway,
                      {sg4::LinkInRoute(switch_down), sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::DOWN)},
                      false);
    }
  }

  // Node pairs with their own link skip the switch.
  for (const auto& o : cluster_.overrides()) {
    if (cluster_.nodes()[o.src_node].region != r)
      continue;
    sg4::Link* link = simplex(zone, "ovr" + std::to_string(o.src_node) + "-" + std::to_string(o.dst_node),
                              o.link.bandwidth_bytes_per_s, o.link.latency_s, false);
    add_link(link, LinkKind::node_pair,
             "node " + cluster_.nodes()[o.src_node].name + " -> node " + cluster_.nodes()[o.dst_node].name);
    zone->add_bypass_route(node_zones[o.src_node]->get_netpoint(), node_zones[o.dst_node]->get_netpoint(),
                           node_gateways[o.src_node],
                           node_gateways[o.dst_node],
                           {sg4::LinkInRoute(nics[o.src_node], sg4::LinkInRoute::Direction::UP),
                            sg4::LinkInRoute(link),
                            sg4::LinkInRoute(nics[o.dst_node], sg4::LinkInRoute::Direction::DOWN)});
  }
  zone->seal();
}

std::string_view link_kind_name(LinkKind kind)
{
  switch (kind) {
  case LinkKind::port: return "port";
  case LinkKind::nic: return "nic";
  case LinkKind::wan: return "wan";
  case LinkKind::node_pair: return "node_pair";
  case LinkKind::switch_latency: return "switch_latency";
  }
  return "unknown";
}

void Platform::add_link(const sg4::Link* link, LinkKind kind, std::string label, double unbuilt_bandwidth)
{
  if (link)
    link_index_.emplace(link, static_cast<int>(links_.size()));
  links_.push_back(PlatformLink{link, kind, std::move(label), link ? link->get_bandwidth() : unbuilt_bandwidth});
}

void Platform::add_duplex(std::vector<int>& indices, int at, const sg4::SplitDuplexLink* duplex, LinkKind kind,
                          const std::string& name, double unbuilt_bandwidth)
{
  indices[2 * at]     = static_cast<int>(links_.size());
  indices[2 * at + 1] = static_cast<int>(links_.size()) + 1;
  add_link(duplex ? duplex->get_link_up() : nullptr, kind, name + " out", unbuilt_bandwidth);
  add_link(duplex ? duplex->get_link_down() : nullptr, kind, name + " in", unbuilt_bandwidth);
}

void Platform::add_unbuilt_node(int n)
{
  const Node& node = cluster_.nodes()[n];
  for (int d : node.devices)
    add_duplex(port_links_, d, nullptr, LinkKind::port, "dev" + std::to_string(d) + " port",
               capacity(node.intra.bandwidth_bytes_per_s));
  add_duplex(nic_links_, n, nullptr, LinkKind::nic, "node " + node.name + " NIC",
             capacity(node.nic.bandwidth_bytes_per_s));
}

int Platform::wan_link(int src_region, int dst_region) const
{
  return wan_links_[static_cast<std::size_t>(src_region) * cluster_.regions().size() + dst_region];
}

std::vector<int> Platform::route_links(int src, int dst) const
{
  std::vector<int> route;
  if (src == dst)
    return route;
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  hosts_[src]->route_to(hosts_[dst], links, &latency_s);
  for (const auto* link : links) {
    const auto it = link_index_.find(link);
    HETSIM_ASSERT(it != link_index_.end());
    route.push_back(it->second);
  }
  return route;
}

Link Platform::route(int src, int dst) const
{
  if (src == dst)
    return Link{};
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  hosts_[src]->route_to(hosts_[dst], links, &latency_s);
  Link result;
  result.latency_s = latency_s;
  for (const auto* link : links)
    result.bandwidth_bytes_per_s = std::min(result.bandwidth_bytes_per_s, link->get_bandwidth());
  if (result.bandwidth_bytes_per_s >= kUnlimitedBandwidth)
    result.bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  return result;
}

double Platform::latency(int src, int dst) const
{
  if (src == dst)
    return 0;
  const long long key = static_cast<long long>(src) * cluster_.device_count() + dst;
  if (auto it = latency_cache_.find(key); it != latency_cache_.end())
    return it->second;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
  double latency_s = 0;
  hosts_[src]->route_to(hosts_[dst], links, &latency_s);
  latency_cache_.emplace(key, latency_s);
  return latency_s;
}

} // namespace hetsim::sim
