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
  } else if (starts_with(n, "cpu")) {
    // A CPU core running the cpu executor: Eigen's register block in a baseline x86-64 build (two SSE packets
    // of 4 floats x 4 columns) is its tile, one core has no waves, and the core that issues a kernel is the one
    // that runs it, so there is no separate dispatch cost. The ceiling and launch gap are what `hetsim
    // calibrate` fits.
    c.tile_m          = 8;
    c.tile_n          = 4;
    c.k_overhead      = 16;
    c.host_dispatch_s = 0;
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

double kernel_seconds(const GpuSpec& gpu, const KernelConstants& c, const models::Kernel& kernel, Dtype dtype)
{
  const double bytes = kernel.bytes * dtype_bytes(dtype) / 2.0;
  switch (kernel.kind) {
  case models::Kernel::Kind::matmul:
    return matmul_seconds(gpu, c, kernel.m, kernel.n, kernel.k, kernel.batch, dtype);
  case models::Kernel::Kind::fused_attention:
    return std::max(kernel.flops / (gpu.peak_flops(dtype) * c.gemm_ceiling), memory_seconds(gpu, c, bytes));
  case models::Kernel::Kind::stream:
    return memory_seconds(gpu, c, bytes);
  }
  return 0;
}

double kernels_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Kernel>& kernels,
                       Dtype dtype)
{
  double device = 0;
  for (const auto& kernel : kernels)
    device += kernel_seconds(gpu, c, kernel, dtype);
  const auto launched = static_cast<double>(kernels.size());
  return std::max(device + launched * c.launch_gap_s, launched * c.host_dispatch_s);
}

double operators_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Operator>& ops,
                         int tp, double samples, Dtype dtype, bool backward, bool sequence_parallel)
{
  std::vector<models::Kernel> kernels;
  for (const auto& op : ops)
    for (auto& kernel : models::operator_kernels(op, tp, samples, backward, sequence_parallel))
      kernels.push_back(std::move(kernel));
  return kernels_seconds(gpu, c, kernels, dtype);
}

} // namespace hetsim::costmodel
