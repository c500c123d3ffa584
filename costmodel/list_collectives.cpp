#include "costmodel/list_collectives.hpp"

#include <algorithm>

namespace hetsim::costmodel {

double list_collective_seconds(const GpuSpec& gpu, const KernelConstants& constants, CollectiveOp op, int ranks,
                               double bytes)
{
  if (ranks < 2 || (op != CollectiveOp::all_gather && op != CollectiveOp::reduce_scatter))
    return 0;
  const bool gather = op == CollectiveOp::all_gather;
  // A gather also issues the zero fill, its own piece's copy and the collective after the synchronize.
  const double issued = ranks + (gather ? 3 : 0);
  // Each copy reads and writes its piece; a gather's fill writes the whole tensor once more.
  const double moved = (gather ? 3 : 2) * bytes;
  const double host   = issued * kCopyIssueSeconds;
  const double device = ranks * constants.launch_gap_s;
  return std::max(host, device) + memory_seconds(gpu, constants, moved);
}

double list_calls_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, int calls,
                          double bytes)
{
  if (calls <= 0 || devices.empty())
    return 0;
  const int ranks       = static_cast<int>(devices.size());
  double slowest        = 0;
  const GpuSpec* priced = nullptr; // a group is mostly one GPU type: price each run of it once
  for (int device : devices) {
    const GpuSpec& gpu = cluster.gpu_of(device);
    if (&gpu == priced)
      continue;
    priced  = &gpu;
    slowest = std::max(slowest, list_collective_seconds(gpu, kernel_constants(gpu), op, ranks, bytes / calls));
  }
  return calls * slowest;
}

} // namespace hetsim::costmodel
