#pragma once
/// What a collective's kernel takes from the computation running beside it on the same GPU.
///
/// NCCL launches one thread block per channel (src/enqueue.cc:1758 at v2.30.7-1, `grid = {nChannels, 1, 1}`),
/// of up to NCCL_MAX_NTHREADS = 640 threads (src/include/device.h:93), and each block loops over the whole call:
/// it holds its multiprocessor, registers and shared memory until the call ends. A matrix product's blocks, which
/// take most of a multiprocessor's shared memory, cannot share it, so a product running beside the collective runs
/// on the other multiprocessors: with a share s of them taken, the computation beside the call progresses at
/// 1 - s of its rate. Published: Hong et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
/// Distributed Deep Learning" (arXiv 2507.03114, 2025) measure GPT and Llama training on 4 A100 and 4 H100 at an
/// 18.9% slower computation on average while overlapped (40.0% at most); an H100 product of 132 blocks beside
/// an all-gather of 24 channels took about twice as long (NVIDIA developer forum, "Compute-communication overlap
/// causes severe GEMM performance degradation because of tail effect", 2025): a second wave HetSim does not
/// model. The collective itself is taken as unslowed (its blocks are resident once launched), and the memory
/// bandwidth its copies take from memory-bound kernels is not counted.
///
/// Megatron-LM sets CUDA_DEVICE_MAX_CONNECTIONS=1 (its launch scripts, and the export): one hardware queue, so a
/// collective issued before a product is scheduled before it and gets its multiprocessors, as here. With more
/// queues a product issued first may fill every multiprocessor and the collective waits instead; HetSim does not
/// model that order.

#include "core/cluster.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/nccl_tuning.hpp"

#include <vector>

namespace hetsim::costmodel {

/// The share of `gpu`'s multiprocessors `channels` blocks hold: 0 for a device without multiprocessors (a CPU).
double multiprocessor_share(const GpuSpec& gpu, int channels);

/// The share a collective over `devices` of `cluster` takes on each of their GPUs, in their order: the
/// communicator's channels (nccl_channels) over the GPU's multiprocessors. All 0 for a collective of one device.
std::vector<double> collective_multiprocessor_shares(const Cluster& cluster, const std::vector<int>& devices,
                                                     const NcclEnvironment& environment = {});

/// The most of a GPU's multiprocessors one collective takes: NCCL's blocks are resident only where the
/// multiprocessors have room, and the computation still runs. In the replay, calls in flight together add their
/// holds' weights (two of share s leave the compute (1 - s) / (1 + s)); the estimate counts the largest
/// data-parallel one.
inline constexpr double kMostMultiprocessorsTaken = 0.9;

/// How long `compute_seconds` of work takes when, from its start, a collective holding `share` of the
/// multiprocessors runs beside it for `overlap_seconds`: at 1 - share of its rate while the collective runs, at
/// the full rate after it.
double contended_compute_seconds(double compute_seconds, double share, double overlap_seconds);

} // namespace hetsim::costmodel
