#include "costmodel/kernel_time.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::costmodel {
namespace {

bool starts_with(const std::string& name, const char* prefix)
{
  return name.rfind(prefix, 0) == 0;
}

/// Useful share of the tiles covering `extent` (the last tile is partly empty).
double tile_fill(double extent, double tile)
{
  return extent / (std::ceil(extent / tile) * tile);
}

} // namespace

// The ceilings are the fraction of dense tensor-core peak that cuBLAS reaches on large fp16 products, as
// microbenchmark studies (e.g. Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
// Microbenchmarking", 2018) and vendor GEMM benchmarks report it: about 0.8 on V100 and A100; lower on T4,
// which clocks down under its 70 W cap; about 0.7 of H100's 989 TFLOP/s. Memory efficiency: STREAM-like
// copies reach 85-90% of datasheet bandwidth (BabelStream on V100 and A100). Tiles: cuBLAS' usual
// 128 x 128 thread-block tile on Volta and Turing, 256 x 128 on Ampere and Hopper. Launch gap: a few
// microseconds between dependent kernels on one stream; host dispatch: eager PyTorch spends on the order of
// 10 us per operator in Python, the dispatcher and the launch. None of these was fitted to a measurement:
// experiments/megatron_weak_scaling checks them against Megatron-LM's published runs.
KernelConstants kernel_constants(const GpuSpec& gpu)
{
  KernelConstants c;
  const std::string& n = gpu.name;
  if (starts_with(n, "V100")) {
    c.gemm_ceiling = 0.8;
  } else if (starts_with(n, "T4")) {
    c.gemm_ceiling = 0.55;
  } else if (starts_with(n, "A100") || starts_with(n, "A800") || starts_with(n, "A40")) {
    c.gemm_ceiling = 0.8;
    c.tile_m       = 256;
  } else if (starts_with(n, "H100") || starts_with(n, "H200")) {
    c.gemm_ceiling = 0.7;
    c.tile_m       = 256;
  }
  return c;
}

double matmul_seconds(const GpuSpec& gpu, const KernelConstants& c, double m, double n, double k, double batch,
                      Dtype dtype)
{
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    return 0;
  const double flops = 2 * m * n * k * batch;
  double efficiency  = c.gemm_ceiling * tile_fill(m, c.tile_m) * tile_fill(n, c.tile_n) * k / (k + c.k_overhead);
  if (gpu.multiprocessors > 0) {
    // Tiles run in waves over the multiprocessors; a last wave that is partly empty still takes a whole wave.
    const double tiles = std::ceil(m / c.tile_m) * std::ceil(n / c.tile_n) * batch;
    const double waves = std::ceil(tiles / gpu.multiprocessors);
    efficiency *= tiles / (waves * gpu.multiprocessors);
  }
  const double element = dtype_bytes(dtype);
  const double bytes   = element * (m * k + k * n + m * n) * batch;
  return std::max(flops / (gpu.peak_flops(dtype) * efficiency), memory_seconds(gpu, c, bytes));
}

double memory_seconds(const GpuSpec& gpu, const KernelConstants& c, double bytes)
{
  return bytes / (gpu.memory_bandwidth_bytes_per_s * c.memory_efficiency);
}

double operator_seconds(const GpuSpec& gpu, const KernelConstants& c, const models::Operator& op, int tp,
                        double samples, Dtype dtype, bool backward)
{
  using models::OperatorKind;
  using models::TensorSplit;
  const double divisor = op.tensor_parallel_divisor(tp);
  const double scale   = dtype_bytes(dtype) / 2.0; // operator bytes are 16-bit
  switch (op.kind) {
  case OperatorKind::linear:
  case OperatorKind::batched_matmul: {
    const bool batched = op.kind == OperatorKind::batched_matmul;
    double m = batched ? op.m : op.m * samples;
    double n = op.n, k = op.k, batch = batched ? op.count * samples : 1;
    if (op.split == TensorSplit::columns)
      n /= divisor;
    else if (op.split == TensorSplit::rows)
      k /= divisor;
    else if (op.split == TensorSplit::heads)
      batch /= divisor;
    if (!backward)
      return matmul_seconds(gpu, c, m, n, k, batch, dtype);
    // The gradient of the input (m x n times n x k) and of the second operand (k x m times m x n).
    return matmul_seconds(gpu, c, m, k, n, batch, dtype) + matmul_seconds(gpu, c, k, n, m, batch, dtype);
  }
  case OperatorKind::fused_attention: {
    // FlashAttention-2 (Dao, 2023): forward near the matrix-product ceiling, backward 2.5x the forward's
    // matrix products (five against two, the scores recomputed).
    const double flops = op.fixed_flops_per_sample * samples / divisor * (backward ? 2.5 : 1);
    const double bytes = op.bytes_per_sample * samples / divisor * scale * (backward ? 2 : 1);
    return std::max(flops / (gpu.peak_flops(dtype) * c.gemm_ceiling), memory_seconds(gpu, c, bytes));
  }
  case OperatorKind::memory_bound: {
    // Backward reads the output gradient and what was saved and writes the input gradient: twice the forward.
    // A vocabulary-parallel lookup still writes a whole (masked) output; only its table is divided.
    const double per_sample = op.split == TensorSplit::vocabulary ? 1.0 : divisor;
    double bytes = op.bytes_per_sample * samples / per_sample * scale * (backward ? 2 : 1);
    if (backward)
      bytes += op.backward_fixed_bytes / divisor * scale;
    return memory_seconds(gpu, c, bytes);
  }
  }
  return 0;
}

double operators_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Operator>& ops,
                         int tp, double samples, Dtype dtype, bool backward)
{
  double device = 0;
  int launched  = 0;
  for (const auto& op : ops) {
    device += operator_seconds(gpu, c, op, tp, samples, dtype, backward);
    launched += models::kernels(op, backward);
  }
  return std::max(device + launched * c.launch_gap_s, launched * c.host_dispatch_s);
}

} // namespace hetsim::costmodel
