#include "costmodel/nccl_occupancy.hpp"

#include "costmodel/nccl_collective.hpp"

#include <algorithm>

namespace hetsim::costmodel {

double multiprocessor_share(const GpuSpec& gpu, int channels)
{
  if (gpu.multiprocessors <= 0 || channels <= 0)
    return 0;
  return std::min(kMostMultiprocessorsTaken, static_cast<double>(channels) / gpu.multiprocessors);
}

std::vector<double> collective_multiprocessor_shares(const Cluster& cluster, const std::vector<int>& devices,
                                                     const NcclEnvironment& environment)
{
  std::vector<double> shares(devices.size(), 0.0);
  if (devices.size() < 2)
    return shares;
  const int channels = nccl_channels(nccl_topology_of(cluster, devices), environment);
  for (std::size_t i = 0; i < devices.size(); ++i)
    shares[i] = multiprocessor_share(cluster.gpu_of(devices[i]), channels);
  return shares;
}

double contended_compute_seconds(double compute_seconds, double share, double overlap_seconds)
{
  if (share <= 0 || overlap_seconds <= 0 || compute_seconds <= 0)
    return compute_seconds;
  share = std::min(share, kMostMultiprocessorsTaken);
  const double slowed = compute_seconds / (1 - share); // all of it beside the collective
  if (overlap_seconds >= slowed)
    return slowed;
  return compute_seconds + share * overlap_seconds; // (1 - share) x overlap done slowly, the rest at full rate
}

} // namespace hetsim::costmodel
