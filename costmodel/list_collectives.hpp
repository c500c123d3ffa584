#pragma once
/// A collective called through torch.distributed's list API, a list of one tensor per rank instead of one flat
/// tensor, as DeepSpeed's ZeRO-3 called one for each parameter tensor before 0.6 (partition_parameters.py at
/// v0.3.15: `_allgather_param`, l.741-788, `_reduce_scatter_gradient`, l.883-920).
///
/// PyTorch's ProcessGroupNCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, `allgather` and `reduce_scatter`
/// at 1.8) moves the list through one flat buffer: an all-gather copies each rank's piece out of it after the
/// call, a reduce-scatter copies each rank's piece into it before; one `copy_` per rank, each issued by the host
/// on the communication stream. Before each gather DeepSpeed also zero-fills the gathered tensor (l.756), calls
/// torch.cuda.synchronize() (l.763) and copies its own piece in (l.779): the device has drained its queues while
/// the host issues the gather's kernels, so their host time is spent with the device waiting.
///
/// The host's time per `copy_` is measured: the median of the 1,362 aten::copy_ operators in
/// tests/data/h100/pytorch/kineto-gpt2-medium-mb4.json.gz (PyTorch's profiler on, which adds to it), 15.7 us. The
/// device runs each copy in its launch gap plus its bytes at the memory's rate, faster than the host issues
/// them; the bytes are what remains.

#include "core/cluster.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/collective.hpp"
#include "costmodel/kernel_time.hpp"

namespace hetsim::costmodel {

/// Host time PyTorch takes to issue one `copy_` (see above).
inline constexpr double kCopyIssueSeconds = 15.7e-6;

/// Time one call of `op` (an all-gather or a reduce-scatter) of `bytes` (the gathered tensor, or the gradient
/// reduced) over `ranks` adds through the list API on `gpu`, beyond the collective: each rank's copy issued
/// (and for a gather the fill, the own piece's copy and the collective's launch after the synchronize), or the
/// copies' device time when longer, plus the bytes the copies and the fill move. 0 for other operations.
double list_collective_seconds(const GpuSpec& gpu, const KernelConstants& constants, CollectiveOp op, int ranks,
                               double bytes);

/// The same for `calls` calls moving `bytes` in all over `devices` of `cluster`, on the slowest of their GPUs.
double list_calls_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, int calls,
                          double bytes);

} // namespace hetsim::costmodel
