#include "costmodel/collective.hpp"

#include "costmodel/nccl_collective.hpp"

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

double library_latency_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, int calls,
                               Algorithm algorithm, const NcclEnvironment& nccl, double bytes)
{
  const int n = static_cast<int>(devices.size());
  if (n <= 1 || calls <= 0)
    return 0;
  if (algorithm == Algorithm::nccl && op != CollectiveOp::all_to_all)
    return calls == 1 ? 0
                      : calls * nccl_collective_seconds(cluster, devices, op, bytes / calls, nccl) -
                            nccl_collective_seconds(cluster, devices, op, bytes, nccl);
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

namespace {

/// The flows that cross one link, shared fairly: while n flows are on it each gets 1/n of it, so a flow of b
/// bytes ends once the link has carried min(b, b_j) of every flow j (processor sharing).
class FairLink {
public:
  void add(double bytes) { bytes_.push_back(bytes); }

  /// Call once every flow is added.
  void seal()
  {
    std::sort(bytes_.begin(), bytes_.end());
    prefix_.assign(bytes_.size() + 1, 0);
    for (std::size_t i = 0; i < bytes_.size(); ++i)
      prefix_[i + 1] = prefix_[i] + bytes_[i];
  }

  /// Bytes the link carries until a flow of `bytes` among them ends.
  double carried_until(double bytes) const
  {
    const auto smaller = static_cast<std::size_t>(std::upper_bound(bytes_.begin(), bytes_.end(), bytes) - bytes_.begin());
    return prefix_[smaller] + static_cast<double>(bytes_.size() - smaller) * bytes;
  }

private:
  std::vector<double> bytes_;
  std::vector<double> prefix_;
};

} // namespace

std::vector<double> shared_flow_seconds(const Cluster& cluster, const std::vector<Flow>& flows)
{
  std::map<int, FairLink> leaving, entering;           // NIC out of / into each node
  std::map<std::pair<int, int>, FairLink> region_pairs; // WAN link from one region to another
  for (const Flow& flow : flows) {
    const int from = cluster.device(flow.src).node, to = cluster.device(flow.dst).node;
    if (from == to)
      continue;
    leaving[from].add(flow.bytes);
    entering[to].add(flow.bytes);
    region_pairs[{cluster.region_of(flow.src), cluster.region_of(flow.dst)}].add(flow.bytes);
  }
  for (auto* links : {&leaving, &entering})
    for (auto& [node, link] : *links)
      link.seal();
  for (auto& [pair, link] : region_pairs)
    link.seal();

  std::vector<double> seconds;
  seconds.reserve(flows.size());
  for (const Flow& flow : flows) {
    const Link path = cluster.path(flow.src, flow.dst);
    const int from = cluster.device(flow.src).node, to = cluster.device(flow.dst).node;
    if (from == to) {
      seconds.push_back(path.latency_s + flow.bytes / path.bandwidth_bytes_per_s);
      continue;
    }
    const Node& a = cluster.nodes()[from];
    const Node& b = cluster.nodes()[to];
    double busy   = std::max({flow.bytes / a.intra.bandwidth_bytes_per_s, flow.bytes / b.intra.bandwidth_bytes_per_s,
                              leaving[from].carried_until(flow.bytes) / a.nic.bandwidth_bytes_per_s,
                              entering[to].carried_until(flow.bytes) / b.nic.bandwidth_bytes_per_s});
    const Link middle = cluster.between_nodes(from, to);
    const bool shared = a.region != b.region && cluster.wan_sharing() == WanSharing::shared;
    const double wan  = shared ? region_pairs[{a.region, b.region}].carried_until(flow.bytes) : flow.bytes;
    busy              = std::max(busy, wan / middle.bandwidth_bytes_per_s);
    seconds.push_back(path.latency_s + busy);
  }
  return seconds;
}

double concurrent_transfers_seconds(const Cluster& cluster, const std::vector<std::pair<int, int>>& transfers,
                                    double bytes)
{
  std::vector<Flow> flows;
  flows.reserve(transfers.size());
  for (const auto& [src, dst] : transfers)
    flows.push_back({src, dst, bytes});
  const std::vector<double> seconds = shared_flow_seconds(cluster, flows);
  return seconds.empty() ? 0 : *std::max_element(seconds.begin(), seconds.end());
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

double all_to_all_seconds(const Cluster& cluster, const std::vector<int>& devices, double bytes)
{
  const auto n = static_cast<double>(devices.size());
  if (devices.size() <= 1)
    return 0;
  std::vector<Flow> flows;
  flows.reserve(devices.size() * (devices.size() - 1));
  for (int src : devices)
    for (int dst : devices)
      if (src != dst)
        flows.push_back({src, dst, bytes / n});
  const std::vector<double> seconds = shared_flow_seconds(cluster, flows);
  double slowest = *std::max_element(seconds.begin(), seconds.end());
  for (int d : devices)
    slowest = std::max(slowest, (n - 1) / n * bytes / cluster.nodes()[cluster.device(d).node].intra.bandwidth_bytes_per_s);
  return slowest;
}

double collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                          Algorithm algorithm, double bytes, const NcclEnvironment& nccl)
{
  if (op == CollectiveOp::all_to_all)
    return all_to_all_seconds(cluster, devices, bytes);
  switch (algorithm) {
    case Algorithm::tree:
      return tree_seconds(cluster, devices, op, bytes, kTreeChunks);
    case Algorithm::hierarchical:
      return hierarchical_seconds(cluster, devices, op, bytes);
    case Algorithm::nccl:
      return devices.size() <= 1 ? 0 : nccl_collective_seconds(cluster, devices, op, bytes, nccl);
    case Algorithm::ring:
      break;
  }
  return ring_seconds(cluster, devices, op, bytes);
}

} // namespace hetsim::costmodel
