#include "costmodel/collective.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace hetsim::costmodel {
namespace {

/// Step latency and bandwidth of one ring step: the slowest edge of the ring bounds every step.
Link slowest_ring_edge(const Cluster& cluster, const std::vector<int>& devices)
{
  Link worst{std::numeric_limits<double>::infinity(), 0};
  const std::size_t n = devices.size();
  for (std::size_t i = 0; i < n; ++i) {
    const int a = devices[i], b = devices[(i + 1) % n];
    const Link edge             = cluster.path(a, b);
    const bool same_node        = cluster.device(a).node == cluster.device(b).node;
    worst.latency_s             = std::max(worst.latency_s, ring_step_latency(edge.latency_s, same_node));
    worst.bandwidth_bytes_per_s = std::min(worst.bandwidth_bytes_per_s, edge.bandwidth_bytes_per_s);
  }
  return worst;
}

double ring_with_edge(Link edge, CollectiveOp op, int n, double bytes)
{
  if (n <= 1)
    return 0;
  return ring_steps(op, n) * (edge.latency_s + bytes / n / edge.bandwidth_bytes_per_s);
}

} // namespace

double ring_step_latency(double wire_latency_s, bool same_node)
{
  return std::max(wire_latency_s, same_node ? kIntraNodeStepLatency : kNetworkStepLatency);
}

int ring_steps(CollectiveOp op, int n)
{
  return op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
}

double library_latency_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, int calls)
{
  const int n = static_cast<int>(devices.size());
  if (n <= 1 || calls <= 0)
    return 0;
  const double steps = ring_steps(op, n) * slowest_ring_edge(cluster, devices).latency_s;
  return calls * kCallLatency + (calls - 1) * steps;
}

double transfer_seconds(const Cluster& cluster, int src, int dst, double bytes)
{
  if (src == dst)
    return 0;
  const Link path = cluster.path(src, dst);
  return path.latency_s + bytes / path.bandwidth_bytes_per_s;
}

double concurrent_transfers_seconds(const Cluster& cluster, const std::vector<std::pair<int, int>>& transfers,
                                    double bytes)
{
  std::map<int, int> leaving, entering;           // transfers per source / destination node
  std::map<std::pair<int, int>, int> region_pairs; // transfers per (source region, destination region)
  for (const auto& [src, dst] : transfers) {
    if (cluster.device(src).node == cluster.device(dst).node)
      continue;
    ++leaving[cluster.device(src).node];
    ++entering[cluster.device(dst).node];
    ++region_pairs[{cluster.region_of(src), cluster.region_of(dst)}];
  }
  double slowest = 0;
  for (const auto& [src, dst] : transfers) {
    const Link path = cluster.path(src, dst);
    if (cluster.device(src).node == cluster.device(dst).node) {
      slowest = std::max(slowest, path.latency_s + bytes / path.bandwidth_bytes_per_s);
      continue;
    }
    const Node& a = cluster.node_of(src);
    const Node& b = cluster.node_of(dst);
    double bandwidth = std::min({a.intra.bandwidth_bytes_per_s, b.intra.bandwidth_bytes_per_s,
                                 a.nic.bandwidth_bytes_per_s / leaving[cluster.device(src).node],
                                 b.nic.bandwidth_bytes_per_s / entering[cluster.device(dst).node]});
    const Link middle = cluster.between_nodes(cluster.device(src).node, cluster.device(dst).node);
    const bool shared = a.region != b.region && cluster.wan_sharing() == WanSharing::shared;
    bandwidth = std::min(bandwidth, middle.bandwidth_bytes_per_s / (shared ? region_pairs[{a.region, b.region}] : 1));
    slowest = std::max(slowest, path.latency_s + bytes / bandwidth);
  }
  return slowest;
}

double ring_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes)
{
  if (devices.size() <= 1)
    return 0;
  return ring_with_edge(slowest_ring_edge(cluster, devices), op, static_cast<int>(devices.size()), bytes);
}

double tree_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes, int chunks)
{
  const int n = static_cast<int>(devices.size());
  if (op != CollectiveOp::all_reduce)
    return ring_seconds(cluster, devices, op, bytes);
  if (n <= 1)
    return 0;
  Link worst{std::numeric_limits<double>::infinity(), 0};
  for (int i = 1; i < n; ++i) {
    const Link edge             = cluster.path(devices[i], devices[(i - 1) / 2]);
    worst.latency_s             = std::max(worst.latency_s, edge.latency_s);
    worst.bandwidth_bytes_per_s = std::min(worst.bandwidth_bytes_per_s, edge.bandwidth_bytes_per_s);
  }
  // A parent with two children receives (reduce) or sends (broadcast) two chunks at once on one port.
  const int fan_in   = n >= 3 ? 2 : 1;
  const int depth    = static_cast<int>(std::floor(std::log2(n)));
  const double chunk = bytes / chunks;
  const double step  = worst.latency_s + fan_in * chunk / worst.bandwidth_bytes_per_s;
  return 2 * (depth + chunks - 1) * step;
}

double hierarchical_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes)
{
  std::map<int, std::vector<int>> by_node;
  for (int d : devices)
    by_node[cluster.device(d).node].push_back(d);
  const int local = static_cast<int>(by_node.begin()->second.size());
  for (const auto& [node, members] : by_node)
    if (static_cast<int>(members.size()) != local)
      return ring_seconds(cluster, devices, op, bytes);
  const int nodes = static_cast<int>(by_node.size());
  if (nodes == 1 || local == 1)
    return ring_seconds(cluster, devices, op, bytes);

  // Intra-node phase: the slowest node's ring.
  double intra = 0;
  for (const auto& [node, members] : by_node)
    intra = std::max(intra, ring_seconds(cluster, members, CollectiveOp::reduce_scatter, bytes));

  // Inter-node phase: `local` rings run at once, one per local position, sharing each node's NIC.
  std::vector<int> leaders;
  for (const auto& [node, members] : by_node)
    leaders.push_back(members.front());
  Link edge = slowest_ring_edge(cluster, leaders);
  double port_bandwidth = std::numeric_limits<double>::infinity();
  for (int d : leaders)
    port_bandwidth = std::min(port_bandwidth, cluster.node_of(d).intra.bandwidth_bytes_per_s);
  if (edge.bandwidth_bytes_per_s < port_bandwidth)
    edge.bandwidth_bytes_per_s = std::min(port_bandwidth, edge.bandwidth_bytes_per_s / local);
  const double inter = ring_with_edge(edge, op, nodes, bytes / local);

  return op == CollectiveOp::all_reduce ? 2 * intra + inter : intra + inter;
}

double collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                          Algorithm algorithm, double bytes)
{
  switch (algorithm) {
    case Algorithm::tree:
      return tree_seconds(cluster, devices, op, bytes, kTreeChunks);
    case Algorithm::hierarchical:
      return hierarchical_seconds(cluster, devices, op, bytes);
    case Algorithm::ring:
      break;
  }
  return ring_seconds(cluster, devices, op, bytes);
}

} // namespace hetsim::costmodel
