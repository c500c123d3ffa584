#pragma once
/// The hardware a plan runs on: devices grouped in nodes, nodes grouped in regions, and the network.
///
/// Network model (the simulator builds exactly this, and `path()` is its contention-free summary):
///  - every device has a port link to its node's switch (`Node::intra`, full duplex);
///  - every node has a NIC (`Node::nic`, full duplex) to its region's switch;
///  - nodes of one region are joined by a non-blocking switch with latency `Region::latency_s`,
///    unless an override gives a node pair its own link;
///  - each ordered pair of regions has its own WAN link (`inter_region(i, j)`; asymmetric allowed),
///    shared by every flow between them unless `wan_sharing` is `per_flow`.
/// A port link contributes half its latency per traversal, so the latency of a link is the latency between
/// two endpoints that talk only through that kind of link.

#include "core/gpu_spec.hpp"

#include <limits>
#include <string>
#include <vector>

namespace hetsim {

struct Link {
  double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  double latency_s             = 0;
};

struct Device {
  int id         = 0;
  int gpu        = 0; ///< index into Cluster::gpus()
  int node       = 0;
  int local_rank = 0; ///< position inside its node
  /// Where the cluster file gives this device its GPU (`cluster.json: regions[0].nodes[1].gpu`), so that a
  /// plan that does not fit can name the field to change; empty for clusters built in code.
  std::string gpu_origin;
};

/// What joins a node's GPUs, as NCCL's topology search sees it (costmodel/nccl_collective.hpp).
enum class IntraFabric {
  unstated, ///< not said: SXM GPUs on an NVSwitch board, others on PCIe
  nvswitch, ///< NVLink through NVSwitches (HGX/DGX boards from A100 on, DGX-2)
  nvlink,   ///< NVLink between GPUs directly (DGX-1, 4-GPU HGX boards, NVLink bridges)
  pcie      ///< PCIe only
};

/// How a node's NIC carries NCCL's traffic to other nodes (costmodel/nccl_pipeline.hpp).
enum class NicTransport {
  unstated,   ///< not said: read as InfiniBand, NCCL's transport on any RDMA NIC
  infiniband, ///< InfiniBand (HDR, NDR, XDR) through IB verbs
  roce,       ///< RDMA over Converged Ethernet: NCCL's same IB-verbs transport
  efa,        ///< AWS Elastic Fabric Adapter through the aws-ofi-nccl plugin
  socket      ///< TCP through NCCL's socket transport (src/transport/net_socket.cc): Ethernet without RDMA or EFA
};

/// What NCCL's socket transport moves through one node's NIC on large messages, whatever the NIC's line rate: it
/// stages every byte in pinned host memory (net_socket.cc: NCCL_PTR_HOST only, so no GPUDirect) and the host's TCP
/// stack copies it, on one proxy thread per GPU and as many helper threads as NCCL's auto rule gives the NIC
/// (AWS 2 x 8 sockets, GCP 4 x 1, otherwise none: net_socket.cc, v2.7.8-1 l.229-251). Public runs, Gb/s per
/// node (all_reduce busbw, or the NIC's rate in training): 14.7 (GCP 32 GbE, 2 x 8 GPUs) and 22.5 (4 x 8), NCCL
/// 2.4.7, nccl#209; 37.6 (AWS p3dn ENA 100 Gb/s, 2 x 1 V100, NCCL 2.4.8 with its AWS sockets), nccl#398; 32-48
/// (4 x 8 V100, 100 Gb/s), nccl#450; 13.6 (Azure 25 Gb/s, 2 x 4 V100), nccl-tests#83; 65 (2 x 1 L40S, NCCL
/// 2.27.3, tests/data/nccl_tests System 7). Their median, 30 Gb/s, stands for a NIC faster than that unless the
/// cluster file gives its own figure (nic.achieved_gbps); the spread, 13.6 to 65, is the prediction band's.
inline constexpr double kSocketTransportGbps = 30;
inline constexpr double kSocketTransportLowestGbps = 13.6, kSocketTransportHighestGbps = 65;

struct Node {
  std::string name;
  int region = 0;
  std::vector<int> devices;
  Link intra; ///< each device's port to the node switch (NVLink, PCIe)
  Link nic;   ///< the node's network interface, shared by its devices
  IntraFabric fabric = IntraFabric::unstated;
  NicTransport transport = NicTransport::unstated;
  /// The NIC's line rate where its transport moves less (`nic` is then what it moves: socket); 0: `nic`'s own.
  double nic_nominal_bytes_per_s = 0;
  /// What the socket transport moves here was measured (the file's achieved rate, or a calibration's), not
  /// the public runs' median.
  bool socket_rate_measured = false;
};

struct Region {
  std::string name;
  double latency_s = 0; ///< node-to-node latency across the region's switch
  std::vector<int> nodes;
};

/// A node pair (same region) joined by its own link instead of the region switch.
struct NodePairOverride {
  int src_node = 0;
  int dst_node = 0;
  Link link;
};

enum class WanSharing { shared, per_flow };

class Cluster {
public:
  /// Far beyond any real cluster; it keeps a typo such as "repeat": 100000 (or a trace's pid) from exhausting memory.
  static constexpr int kMaxDevices = 1 << 20;

  explicit Cluster(std::string name = "cluster") : name_(std::move(name)) {}

  // --- construction (used by the JSON loader and by tests/benchmarks) ---
  int add_gpu(const GpuSpec& spec); ///< returns the index; identical names are merged
  int add_region(const std::string& name, double latency_s);
  int add_node(int region, const std::string& name, Link intra, Link nic);
  int add_device(int node, int gpu, std::string gpu_origin = {});
  /// Replaces a node's NIC (a folded replay narrows the NICs whose traffic it replays in part).
  void set_nic(int node, Link nic);
  void set_fabric(int node, IntraFabric fabric);
  /// Under the socket transport the node's NIC carries `achieved_bytes_per_s` (measured; 0: the public runs'
  /// median, kSocketTransportGbps), never more than its line rate, which stays in nic_nominal; another
  /// transport carries the line rate.
  void set_transport(int node, NicTransport transport, double achieved_bytes_per_s = 0);
  /// Adds a node as `like` is (its name, fabric and transport) with these links: `nic` is what its NIC carries,
  /// as like.nic is, its line rate kept. Returns the id.
  int add_node_like(int region, const Node& like, Link intra, Link nic);
  /// Sets the WAN link from region `src` to region `dst`; every ordered pair of distinct regions needs one.
  void set_inter_region(int src, int dst, Link link);
  void add_override(NodePairOverride override_link);
  void set_wan_sharing(WanSharing sharing) { wan_sharing_ = sharing; }

  // --- queries ---
  const std::string& name() const { return name_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& devices() const { return devices_; }
  const Device& device(int id) const;
  const GpuSpec& gpu_of(int device) const { return gpus_[this->device(device).gpu]; }
  /// The device's GPU name for messages, with the file field that chose it when known: "T4 (cluster.json:
  /// regions[0].nodes[1].gpu)".
  std::string describe_gpu(int device) const;
  const std::vector<GpuSpec>& gpus() const { return gpus_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Region>& regions() const { return regions_; }
  const Node& node_of(int device) const { return nodes_[this->device(device).node]; }
  int region_of(int device) const { return node_of(device).region; }
  Link inter_region(int src, int dst) const;
  const std::vector<NodePairOverride>& overrides() const { return overrides_; }
  /// The override for this ordered node pair, or nullptr.
  const NodePairOverride* find_override(int src_node, int dst_node) const;
  WanSharing wan_sharing() const { return wan_sharing_; }

  /// End-to-end latency and bottleneck bandwidth from one device to another on an idle network.
  Link path(int src, int dst) const;
  /// What joins two different nodes between their NICs: the WAN link of their regions, the pair's override, or
  /// the region switch (latency only).
  Link between_nodes(int src_node, int dst_node) const;

private:
  std::string name_;
  std::vector<GpuSpec> gpus_;
  std::vector<Device> devices_;
  std::vector<Node> nodes_;
  std::vector<Region> regions_;
  std::vector<std::vector<Link>> inter_region_; ///< [src][dst]
  std::vector<std::vector<char>> inter_region_set_; ///< [src][dst]: was the link given?
  std::vector<NodePairOverride> overrides_;
  WanSharing wan_sharing_ = WanSharing::shared;

  friend void check_cluster_complete(const Cluster& cluster, const std::string& origin);
};

/// The first device (by id) whose GPU cannot train in `dtype`, or -1 when every one can.
int first_device_lacking(const Cluster& cluster, Dtype dtype);
/// Why `device` cannot train in `dtype`, for an error message, with the dtypes every device takes as the way
/// out: "bf16 needs bf16 tensor cores, which device 3's V100-SXM2-16GB (cluster.json: regions[0].nodes[0].gpu)
/// lacks: use fp16 or fp32".
std::string dtype_refusal(const Cluster& cluster, int device, Dtype dtype);

/// Throws InputError (prefixed with `origin`) when a region pair has no WAN link or a latency cannot be
/// represented (a WAN latency below the mean of its two regions' switch latencies).
void check_cluster_complete(const Cluster& cluster, const std::string& origin);

} // namespace hetsim
