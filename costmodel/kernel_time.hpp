#pragma once
/// Time of one operator's kernels on one GPU: the larger of its FLOPs at a shape-dependent matrix-product
/// efficiency and its bytes at the memory bandwidth, and per kernel a launch gap on the device and a dispatch
/// cost on the host, which a layer of small kernels cannot outrun.

#include "core/dtype.hpp"
#include "core/gpu_spec.hpp"
#include "models/operator.hpp"

#include <vector>

namespace hetsim::costmodel {

/// What one GPU family sustains beside its datasheet figures (where each comes from: kernel_time.cpp).
struct KernelConstants {
  double gemm_ceiling      = 0.75; ///< fraction of dense peak a large, full-wave matrix product reaches
  /// The same for fp8 products, of the GPU's fp8 peak; negative: unmeasured, the 16-bit ceiling scaled as the
  /// H100's fp8 and bf16 ones compare (fp8_gemm_ceiling()).
  double fp8_gemm_ceiling  = -1;
  double memory_efficiency = 0.85; ///< fraction of datasheet bandwidth a streaming kernel reaches
  double tile_m = 128, tile_n = 128; ///< output tile of one thread block of the library's usual kernel
  double k_overhead        = 64;    ///< a tile's fixed cost (pipeline fill, epilogue) in units of its depth
  /// Fitted by a calibration, for the fused attention kernel its traces ran: the fraction of dense peak its
  /// products reach forward and backward at a large head size, over the key tiles a causal kernel computes.
  /// Negative: not fitted; each kernel's own figures (costmodel/attention_speed.hpp).
  double attention_ceiling          = -1;
  double attention_backward_ceiling = -1;
  /// What each score's softmax costs, whatever the head size, in head size's worth of products; 0: the kernel's.
  double attention_softmax_depth = 0;
  /// Fraction of dense peak a product reaches when a dimension is not a multiple of 16 bytes (8 16-bit
  /// elements): the library cannot use its tensor-core kernels' vector loads and falls back. Negative: no
  /// such fallback (a CPU).
  double unaligned_ceiling = 0.25;
  /// Bytes per second one multiprocessor moves through PyTorch's elementwise kernels that cannot load in vectors
  /// (mixed dtypes, broadcast or strided operands: models::Kernel::vectorized): issue-bound, so the rate follows
  /// the multiprocessors and their clock, not the memory. 0: no such limit.
  double unvectorized_bytes_per_sm_s = 0;
  /// A model family's elementwise kernels its operators leave out, as a factor on their memory-bound passes:
  /// fitted by a calibration on that family's traces (Calibration::families), 1 otherwise. Not the GPU's.
  double elementwise_scale = 1;
  double launch_gap_s      = 3e-6;  ///< device idle between two back-to-back kernels
  double host_dispatch_s   = 28e-6; ///< host time to issue one kernel from the framework (eager PyTorch)
};

/// The constants of `gpu`'s family, by catalog name ("V100…", "A100…", "H100…", …); defaults otherwise.
KernelConstants kernel_constants(const GpuSpec& gpu);
/// The fraction of the fp8 peak a large fp8 product reaches: the measured one, or the 16-bit ceiling scaled.
double fp8_gemm_ceiling(const KernelConstants& c);

/// Whether a dimension of `extent` elements of `dtype` is a whole number of 16-byte vectors, as tensor-core
/// kernels load them. A fractional extent (a context-parallel share, an average) is not a shape, and passes.
bool whole_vectors(double extent, Dtype dtype);

/// `batch` independent m x k times k x n products, row-major: the operands' leading dimensions are k and n (m,
/// the rows, is not one), which tensor-core kernels need in whole 16-byte vectors; `aligned` says they are.
double matmul_seconds(const GpuSpec& gpu, const KernelConstants& c, double m, double n, double k, double batch,
                      Dtype dtype, bool aligned);
/// The same, aligned as its n and k are.
double matmul_seconds(const GpuSpec& gpu, const KernelConstants& c, double m, double n, double k, double batch,
                      Dtype dtype);
/// Attention kernel `kernel` (one that runs on `gpu`: costmodel::attention_run), forward or `backward`, whose
/// products are `flops` over the whole s x s square of `sequence` tokens with heads of `head_size`, moving `bytes`
/// (16-bit, already rescaled for `dtype`). A calibration's fitted attention ceilings replace the kernel's.
double attention_seconds(const GpuSpec& gpu, const KernelConstants& c, models::AttentionKernel kernel, double flops,
                         double sequence, double head_size, bool backward, Dtype dtype, double bytes);
/// A kernel that streams `bytes` through memory.
double memory_seconds(const GpuSpec& gpu, const KernelConstants& c, double bytes);
/// The same on an elementwise path that loads one element at a time: the slower of the memory and the
/// multiprocessors' rate.
double unvectorized_seconds(const GpuSpec& gpu, const KernelConstants& c, double bytes);

/// Device time of one kernel (without its launch gap); its bytes are 16-bit, rescaled for `dtype`.
double kernel_seconds(const GpuSpec& gpu, const KernelConstants& c, const models::Kernel& kernel, Dtype dtype);

/// A layer's forward or backward pass over its operators' kernels (models::operator_kernels): device time plus
/// launch gaps, or the host's dispatch time when that is longer.
double operators_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Operator>& ops,
                         int tp, double samples, Dtype dtype, bool backward, bool sequence_parallel = false);
/// The same over a list of kernels.
double kernels_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Kernel>& kernels,
                       Dtype dtype);

} // namespace hetsim::costmodel
