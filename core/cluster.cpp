#include "core/cluster.hpp"

#include "core/error.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cstdio>

namespace hetsim {

int Cluster::add_gpu(const GpuSpec& spec)
{
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].name == spec.name)
      return static_cast<int>(i);
  gpus_.push_back(spec);
  return static_cast<int>(gpus_.size() - 1);
}

int Cluster::add_region(const std::string& name, double latency_s)
{
  regions_.push_back(Region{name, latency_s, {}});
  const std::size_t count = regions_.size();
  for (auto& row : inter_region_)
    row.resize(count);
  inter_region_.resize(count, std::vector<Link>(count));
  for (auto& row : inter_region_set_)
    row.resize(count, 0);
  inter_region_set_.resize(count, std::vector<char>(count, 0));
  return static_cast<int>(count - 1);
}

int Cluster::add_node(int region, const std::string& name, Link intra, Link nic)
{
  HETSIM_ASSERT(region >= 0 && region < static_cast<int>(regions_.size()));
  nodes_.push_back(Node{name, region, {}, intra, nic});
  regions_[region].nodes.push_back(static_cast<int>(nodes_.size() - 1));
  return static_cast<int>(nodes_.size() - 1);
}

void Cluster::set_nic(int node, Link nic)
{
  HETSIM_ASSERT(node >= 0 && node < static_cast<int>(nodes_.size()));
  nodes_[node].nic = nic;
}

void Cluster::set_fabric(int node, IntraFabric fabric)
{
  HETSIM_ASSERT(node >= 0 && node < static_cast<int>(nodes_.size()));
  nodes_[node].fabric = fabric;
}

void Cluster::set_transport(int node, NicTransport transport, double achieved_bytes_per_s)
{
  HETSIM_ASSERT(node >= 0 && node < static_cast<int>(nodes_.size()) && achieved_bytes_per_s >= 0);
  Node& n     = nodes_[node];
  n.transport = transport;
  if (n.nic_nominal_bytes_per_s > 0) // back to the line rate, whatever the transport is now
    n.nic.bandwidth_bytes_per_s = n.nic_nominal_bytes_per_s;
  n.nic_nominal_bytes_per_s = 0;
  n.socket_rate_measured    = false;
  if (transport != NicTransport::socket)
    return;
  n.nic_nominal_bytes_per_s = n.nic.bandwidth_bytes_per_s;
  n.socket_rate_measured    = achieved_bytes_per_s > 0;
  const double achieved = achieved_bytes_per_s > 0 ? achieved_bytes_per_s : kSocketTransportGbps * units::kGbps;
  n.nic.bandwidth_bytes_per_s = std::min(n.nic_nominal_bytes_per_s, achieved);
}

int Cluster::add_node_like(int region, const Node& like, Link intra, Link nic)
{
  Link line_rate = nic;
  if (like.nic_nominal_bytes_per_s > 0)
    line_rate.bandwidth_bytes_per_s = std::max(like.nic_nominal_bytes_per_s, nic.bandwidth_bytes_per_s);
  const int id = add_node(region, like.name, intra, line_rate);
  set_fabric(id, like.fabric);
  set_transport(id, like.transport, nic.bandwidth_bytes_per_s);
  nodes_[id].socket_rate_measured = like.transport == NicTransport::socket &&
                                    (like.socket_rate_measured || nic.bandwidth_bytes_per_s != like.nic.bandwidth_bytes_per_s);
  return id;
}

int Cluster::add_device(int node, int gpu, std::string gpu_origin)
{
  HETSIM_ASSERT(node >= 0 && node < static_cast<int>(nodes_.size()));
  HETSIM_ASSERT(gpu >= 0 && gpu < static_cast<int>(gpus_.size()));
  Device d;
  d.id         = static_cast<int>(devices_.size());
  d.gpu        = gpu;
  d.node       = node;
  d.local_rank = static_cast<int>(nodes_[node].devices.size());
  d.gpu_origin = std::move(gpu_origin);
  devices_.push_back(std::move(d));
  nodes_[node].devices.push_back(d.id);
  return d.id;
}

void Cluster::set_inter_region(int src, int dst, Link link)
{
  const int count = static_cast<int>(regions_.size());
  HETSIM_ASSERT(src >= 0 && src < count && dst >= 0 && dst < count && src != dst);
  inter_region_[src][dst]     = link;
  inter_region_set_[src][dst] = 1;
}

void Cluster::add_override(NodePairOverride override_link)
{
  HETSIM_ASSERT(nodes_[override_link.src_node].region == nodes_[override_link.dst_node].region);
  overrides_.push_back(override_link);
}

const Device& Cluster::device(int id) const
{
  HETSIM_ASSERT(id >= 0 && id < device_count());
  return devices_[id];
}

Link Cluster::inter_region(int src, int dst) const
{
  return inter_region_[src][dst];
}

const NodePairOverride* Cluster::find_override(int src_node, int dst_node) const
{
  for (const auto& o : overrides_)
    if (o.src_node == src_node && o.dst_node == dst_node)
      return &o;
  return nullptr;
}

Link Cluster::path(int src, int dst) const
{
  if (src == dst)
    return Link{};
  const Node& a = node_of(src);
  const Node& b = node_of(dst);
  if (&a == &b)
    return a.intra;

  // Leaving and entering a node: half the port latency and half the NIC latency on each side.
  Link result;
  result.latency_s = (a.intra.latency_s + a.nic.latency_s + b.intra.latency_s + b.nic.latency_s) / 2;
  result.bandwidth_bytes_per_s =
      std::min({a.intra.bandwidth_bytes_per_s, a.nic.bandwidth_bytes_per_s, b.intra.bandwidth_bytes_per_s,
                b.nic.bandwidth_bytes_per_s});
  const Link middle = between_nodes(device(src).node, device(dst).node);
  result.latency_s += middle.latency_s;
  result.bandwidth_bytes_per_s = std::min(result.bandwidth_bytes_per_s, middle.bandwidth_bytes_per_s);
  return result;
}

Link Cluster::between_nodes(int src_node, int dst_node) const
{
  const Node& a = nodes_[src_node];
  const Node& b = nodes_[dst_node];
  if (a.region != b.region)
    return inter_region(a.region, b.region);
  if (const auto* o = find_override(src_node, dst_node))
    return o->link;
  return Link{Link{}.bandwidth_bytes_per_s, regions_[a.region].latency_s};
}

void check_cluster_complete(const Cluster& cluster, const std::string& origin)
{
  const auto& regions = cluster.regions_;
  const int count     = static_cast<int>(regions.size());
  if (cluster.devices_.empty())
    throw InputError(origin + ": the cluster has no devices");
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      if (i == j)
        continue;
      if (!cluster.inter_region_set_[i][j])
        throw InputError(origin + ": inter_region: no link from region '" + regions[i].name + "' to region '" +
                         regions[j].name + "'");
      // The simulator carries half of each region's switch latency on the NICs, so a WAN hop shorter than
      // that cannot be represented.
      const double floor_s = (regions[i].latency_s + regions[j].latency_s) / 2;
      if (cluster.inter_region_[i][j].latency_s + 1e-12 < floor_s) {
        char buffer[256];
        std::snprintf(buffer, sizeof buffer,
                      ": inter_region.latency_ms[%d][%d]: expected at least %.6g ms (the mean of the two regions' "
                      "intra-region latencies), got %.6g ms",
                      i, j, floor_s * 1e3, cluster.inter_region_[i][j].latency_s * 1e3);
        throw InputError(origin + buffer);
      }
    }
}

std::string Cluster::describe_gpu(int device) const
{
  const Device& d = this->device(device);
  return d.gpu_origin.empty() ? gpus_[d.gpu].name : gpus_[d.gpu].name + " (" + d.gpu_origin + ")";
}

int first_device_lacking(const Cluster& cluster, Dtype dtype)
{
  for (const Device& device : cluster.devices())
    if (!supports_dtype(cluster.gpus()[device.gpu], dtype))
      return device.id;
  return -1;
}

std::string dtype_refusal(const Cluster& cluster, int device, Dtype dtype)
{
  std::string usable; // what the device does take, as the way out
  for (Dtype other : {Dtype::fp16, Dtype::bf16, Dtype::fp32})
    if (other != dtype && first_device_lacking(cluster, other) < 0)
      usable += (usable.empty() ? "" : " or ") + std::string(dtype_name(other));
  const std::string what = dtype == Dtype::bf16 ? "bf16 tensor cores" : "an fp32 peak";
  return std::string(dtype_name(dtype)) + " needs " + what + ", which device " + std::to_string(device) + "'s " +
         cluster.describe_gpu(device) + " lacks: use " + (usable.empty() ? "another dtype" : usable);
}

} // namespace hetsim
