#include "costmodel/nccl_memory.hpp"

#include "costmodel/nccl_collective.hpp"
#include "costmodel/nccl_pipeline.hpp"

#include "core/units.hpp"

#include <algorithm>

namespace hetsim::costmodel {
namespace {

constexpr double kSteps     = 8;         // NCCL_STEPS (src/include/device.h:26)
constexpr double kNvlsChunk = 128 << 10; // NCCL_NVLS_CHUNKSIZE's default (transport/nvls.cc:160)

/// One connection's receive buffers: LL, LL128 and Simple.
double connection_bytes(const NcclEnvironment& environment)
{
  return nccl_buffer_bytes(NcclProtocol::ll) + nccl_buffer_bytes(NcclProtocol::ll128) +
         nccl_buffer_bytes(NcclProtocol::simple, static_cast<double>(environment.buffer_bytes));
}

/// NVLS_NCHANNELS for the GPU generation (transport/nvls.cc:155-157, 209-214).
int nvls_channels(const NcclTopology& topology)
{
  if (topology.compute_capability >= 100)
    return topology.nodes > 1 ? 32 : 24;
  return 16;
}

int power_of_two_at_least(int n)
{
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

/// The channels NCCL gives sends and receives between `a` and `b` (graph/paths.cc:920-952, made a power of two
/// and at most the communicator's at l.989-1003).
int peer_channels(const Cluster& cluster, int a, int b, const NcclTopology& topology, int channels)
{
  const Node& node = cluster.nodes()[cluster.device(a).node];
  int per_peer     = 2; // PCIe
  if (cluster.device(a).node != cluster.device(b).node) {
    per_peer = std::max(2, topology.nics);
  } else if (topology.intra == NcclIntraLink::nvlink) {
    const double link_GBps = topology.compute_capability >= 100 ? 50 : 25; // one NVLink's nominal
    per_peer = 2 * std::max(1, static_cast<int>(node.intra.bandwidth_bytes_per_s / units::kGBps / link_GBps + 1e-9));
  }
  return std::min(power_of_two_at_least(per_peer), channels);
}

} // namespace

double nccl_communicator_bytes(const Cluster& cluster, const std::vector<int>& devices, NcclUse use,
                               const NcclEnvironment& environment)
{
  if (devices.size() <= 1)
    return 0;
  const NcclTopology topology = nccl_topology_of(cluster, devices);
  const int channels          = nccl_channels(topology, environment);
  if (use == NcclUse::point_to_point)
    return peer_channels(cluster, devices[0], devices[1], topology, channels) * connection_bytes(environment);
  double bytes = channels * connection_bytes(environment);
  if (topology.nodes > 1)
    bytes += 2 * channels * connection_bytes(environment);
  const int local_ranks = topology.ranks / std::max(1, topology.nodes);
  if (topology.nvls_channels > 0 && local_ranks > 1)
    bytes += nvls_channels(topology) * 2 * kSteps * kNvlsChunk * local_ranks;
  return bytes;
}

} // namespace hetsim::costmodel
