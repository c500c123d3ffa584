#include "costmodel/kernel_time.hpp"

#include "core/gpu_family.hpp"
#include "costmodel/attention_speed.hpp"
#include "costmodel/sustained_clock.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::costmodel {
namespace {

/// Useful share of the tiles covering `extent` (the last tile is partly empty).
double tile_fill(double extent, double tile)
{
  return extent / (std::ceil(extent / tile) * tile);
}

/// Split-K: a product of fewer tiles than the GPU has multiprocessors has its depth split over several thread
/// blocks, each summing a part, and a reduction after (cuBLAS' splitKreduce kernels in the H100 traces), as far
/// as fills the GPU while each part keeps 512 of depth. Without it, the kernel sweep's 59 products under one
/// wave came out 116% slow on average (median error 78%); with it -6% (15%). The 512 is fitted to that sweep.
double depth_splits(const GpuSpec& gpu, double tiles, double k)
{
  if (gpu.multiprocessors <= 0 || tiles >= gpu.multiprocessors)
    return 1;
  return std::max(1.0, std::min(std::floor(gpu.multiprocessors / tiles), std::floor(k / 512)));
}

/// Sequences x heads of an attention call, from its FLOPs over the whole square (4 s^2 d each forward; a
/// backward is counted at 2.5 times its forward).
double attention_rows(double flops, double sequence, double head_size, bool backward)
{
  if (sequence <= 0 || head_size <= 0)
    return 0;
  return (backward ? flops / 2.5 : flops) / (4 * sequence * sequence * head_size);
}

/// How much longer a causal attention kernel takes than its work spread evenly over the multiprocessors: query
/// tile i of n computes i + 1 key tiles (backward: key tile j, n - j query tiles), one thread block each per
/// sequence and head (`rows` of them), so the kernel lasts at least its longest block's n tiles. With few rows
/// (FlashAttention-2's paper, sec. 3.2: below about the SM count the GPU is not filled) the average load per
/// SM, rows x n (n + 1) / 2 tiles over the SMs, is less than that: GPT-2 medium's 16 heads at 1,024 tokens and one
/// sequence give 4.4 tiles an SM against the longest block's 8: 1.83 times, as the H100 traces' attention at
/// one sequence took 1.83 times the time per FLOP it took at sixteen. At four sequences (17.5 tiles an SM) they
/// took 1.24 times, which this bound leaves out: the last wave's tail, which a fit to the papers' charts holds.
double causal_imbalance(const GpuSpec& gpu, double rows, double tiles)
{
  if (gpu.multiprocessors <= 0)
    return 1;
  const double average_load = rows * tiles * (tiles + 1) / 2 / gpu.multiprocessors;
  return average_load > 0 ? std::max(1.0, tiles / average_load) : 1;
}

} // namespace

// The ceilings are the fraction of dense tensor-core peak that cuBLAS reaches on large fp16 products: about 0.8
// on the A100 (Bekman's maximum achievable matmul table, ml-engineering: 271 of 312 TFLOP/s at its best shape,
// a few percent less on ordinary ones), 0.67 on the V100 (below); 0.37 on the T4, which clocks down under its
// 70 W cap (below); 0.83 on Hopper (below). Memory efficiency: STREAM-like
// copies reach 85-90% of datasheet bandwidth (BabelStream on V100 and A100). Tiles: cuBLAS' usual
// 128 x 128 thread-block tile on Volta and Turing, 256 x 128 on Ampere and Hopper. Launch gap: a few
// microseconds between dependent kernels on one stream; host dispatch: eager PyTorch spends on the order of
// 10 us per operator in Python, the dispatcher and the launch. None of these was fitted to a measurement:
// experiments/megatron_weak_scaling checks them against Megatron-LM's published runs.
// Host dispatch per launched kernel in a training step: 28 us, from an H100 trace of Hugging Face GPT-2 medium
// in eager PyTorch (tests/data/h100: the forward and backward's 2,033 launches in a 61 ms step, less the fused
// AdamW's 3.75 ms, whose kernels kept the GPU 41% busy, so the host set its pace; the profiler's medians agree,
// 14-17 us per aten op plus 7 us per cudaLaunchKernel). It holds autograd's and autocast's bookkeeping, not a
// bare torch.add's 7-10 us (kernel_sweep.json). A faster or slower host moves it: `hetsim calibrate` keeps it.
// Unaligned products: cuBLAS on an H100 runs a 50,257-wide product with sm75 mma.sync kernels of 2-byte loads
// (cutlass_75_tensorop_bf16_s1688gemm_*_align1) at 95-151 TFLOP/s, 0.10-0.15 of peak, at every size (kernel
// sweep and traces): 0.12. Elsewhere unmeasured: the 16-bit CUDA-core rate, a quarter of tensor peak on V100,
// T4 and A100, bounds a kernel that cannot feed the tensor cores.
// Attention kernels have figures of their own, per kernel and architecture: costmodel/attention_speed.cpp.
// H100 streaming: c = a + b reaches 3.06 TB/s, 0.915 of 3.35, from 128 MB up (kernel_sweep.json).
// Elementwise kernels that cannot load in vectors (mixed dtypes, broadcast operands): in the H100 GPT-2 traces
// (16 sequences) PyTorch's unrolled_elementwise_kernel moves 2.35 TB/s of the H100's 3.35, and on the H200, whose
// memory is 43% faster but whose 132 SMs and clock are the H100's, the Llama-3.2-1B trace's unrolled kernels move
// 2.35 TB/s and its generic strided ones 2.45 (kernels of 16 MB or more, less the launch gap; tests/data): the
// same rate on both, so the SMs set it: 17.8 GB/s per SM at 1.98 GHz, 9.0 bytes per SM and clock cycle.
// Elsewhere that per-cycle figure is carried over at each GPU's boost clock (its datasheet), unmeasured.
constexpr double kUnvectorizedBytesPerSmCycle = 9.0;
// fp8 products: the largest float8_e4m3fn product a sweep of shapes reached, of the dense fp8 peak (ml-engineering's
// MAMF table @744d01e): H100 1,402.6 of 1,979 (0.709), H200 1,453.4 (0.734), GH200 1,535.0 (0.776), B200 3,432.5
// of 4,500 (0.763), B300 3,353.3 (0.745), GB200 3,615.6 of 5,000 (0.723). Elsewhere the 16-bit ceiling times
// the H100's fp8 over bf16 efficiency (0.709 / 0.803). No fp8 training step was measured: on bf16 the H100's
// traces ran 3% above that table's figure, fp8's may sit otherwise.
constexpr double kHopperFp8OverBf16 = 0.709 / 0.803;

KernelConstants kernel_constants(const GpuSpec& gpu)
{
  KernelConstants c;
  const std::string& n = gpu.name;
  if (n.starts_with("V100")) {
    c.unvectorized_bytes_per_sm_s = kUnvectorizedBytesPerSmCycle * 1.53e9;
    // cuBLAS' fp16 tensor-core GEMM on a V100: 83 TFLOP/s of 125 (Markidis et al., "NVIDIA Tensor Core
    // Programmability, Performance & Precision", IPDPSW 2018), and 84 through torch.matmul on square products
    // (chsasank/device-benchmarks): 0.67, where 0.8 had been carried over from the A100.
    c.gemm_ceiling = 0.67;
  } else if (n.starts_with("T4")) {
    // cuBLAS' fp16 GEMM of 4096 x 4096 x 4096 run 100 times on a T4: about 24 TFLOP/s of 65, the 70 W cap
    // clocking it down, "expected behavior for approximately continuous matrix multiply operations on a T4"
    // (NVIDIA Developer Forums, "About GPU peak performance", topic 264462): 0.37. A training step's products
    // run back to back, as that loop's; a short burst reaches about 42 (chsasank-style torch.matmul maxima).
    c.gemm_ceiling = 0.37;
    c.unvectorized_bytes_per_sm_s = kUnvectorizedBytesPerSmCycle * 1.59e9;
    // Device-to-device copies reach 240 of 320 GB/s on the T4's GDDR6 (CUDA's bandwidthTest and a torch copy,
    // both 240): 0.75, against HBM parts' 0.85.
    c.memory_efficiency = 0.75;
  } else if (n.starts_with("A100") || n.starts_with("A800") || n.starts_with("A40")) {
    c.gemm_ceiling = 0.8;
    c.tile_m       = 256;
    c.unvectorized_bytes_per_sm_s = kUnvectorizedBytesPerSmCycle * 1.41e9;
  } else if (n.starts_with("H100") || n.starts_with("H200") || n.starts_with("GH200") || n == "H20" ||
             datacenter_blackwell(gpu)) {
    // The training step's own products: 0.831 fitted to the H100 GPT-2 traces' 1,008 products of 20 us or
    // more, 0.846 to the H200 Llama-3.2-1B trace's 486 (`hetsim calibrate` on tests/data). The kernel sweep's
    // 187 compute-bound shapes give 0.74 time-weighted: many are narrower than a training step's.
    c.gemm_ceiling      = 0.83;
    c.fp8_gemm_ceiling  = n.starts_with("GH200") ? 0.776 : (n.starts_with("H200") ? 0.734 : 0.709);
    c.unvectorized_bytes_per_sm_s = kUnvectorizedBytesPerSmCycle * 1.98e9;
    c.tile_m            = 256;
    c.unaligned_ceiling = 0.12;
    c.memory_efficiency = 0.915;
    if (datacenter_blackwell(gpu)) {
      // Blackwell: the largest bf16 product a sweep of shapes reached, of the dense peak (ml-engineering's
      // Maximum Achievable Matmul FLOPS table @744d01e: B200 1,745 of 2,250 TFLOP/s, B300 1,769 of 2,250, GB200
      // 1,822 of 2,500, PyTorch 2.7-2.10), on the B200 and GB200 at the clock a training step sustains
      // (sustained_clock.cpp; on the H100 the same table's 0.80 is 3% under what its training traces fit, 0.83).
      // The rest is Hopper's above, carried over: its tile, its unaligned fallback, its streaming efficiency on
      // HBM3, its elementwise rate per SM at Hopper's 1.98 GHz (the sources used give no Blackwell boost clock).
      const double sustained = sustained_clock_fraction(gpu);
      c.gemm_ceiling     = sustained * (n.starts_with("GB") ? 0.73 : (n.starts_with("B300") ? 0.79 : 0.78));
      c.fp8_gemm_ceiling = sustained * (n.starts_with("GB") ? 0.723 : (n.starts_with("B300") ? 0.745 : 0.763));
    }
  } else if (instinct_cdna3_or_later(gpu)) {
    // CDNA3/CDNA4 through hipBLASLt, the same table: MI300X 668 of 1,300 TFLOP/s (PyTorch 2.5.1, ROCm 6.3,
    // TunableOp on), MI325X 785 of 1,300 (1,000 W), MI355X 1,565 (ROCm 7.0), here of its 2,500 (the table's row
    // says 2,300). Nothing else is measured: NVIDIA's defaults stand, and no elementwise issue limit.
    c.gemm_ceiling = n.starts_with("MI300") ? 0.51 : (n.starts_with("MI325") ? 0.60 : 0.63);
  } else if (n.starts_with("cpu")) {
    // A CPU core running the cpu executor: Eigen's register block in a baseline x86-64 build (two SSE packets
    // of 4 floats x 4 columns) is its tile, one core has no waves, and the core that issues a kernel is the one
    // that runs it, so there is no separate dispatch cost. The ceiling and launch gap are what `hetsim
    // calibrate` fits.
    c.tile_m          = 8;
    c.tile_n          = 4;
    c.k_overhead        = 16;
    c.host_dispatch_s   = 0;
    c.unaligned_ceiling = -1; // Eigen has no tensor-core path to fall back from
  }
  return c;
}

double fp8_gemm_ceiling(const KernelConstants& c)
{
  return c.fp8_gemm_ceiling > 0 ? c.fp8_gemm_ceiling : c.gemm_ceiling * kHopperFp8OverBf16;
}

bool whole_vectors(double extent, Dtype dtype)
{
  return extent != std::floor(extent) || std::fmod(extent, 16 / dtype_bytes(dtype)) == 0;
}

double matmul_seconds(const GpuSpec& gpu, const KernelConstants& c, double m, double n, double k, double batch,
                      Dtype dtype)
{
  return matmul_seconds(gpu, c, m, n, k, batch, dtype, whole_vectors(n, dtype) && whole_vectors(k, dtype));
}

double matmul_seconds(const GpuSpec& gpu, const KernelConstants& c, double m, double n, double k, double batch,
                      Dtype dtype, bool operands_aligned)
{
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    return 0;
  const double flops = 2 * m * n * k * batch;
  const double element = dtype_bytes(dtype);
  const double bytes   = element * (m * k + k * n + m * n) * batch;
  // Only 16-bit products run on tensor cores, whose kernels need the aligned loads; fp32 runs on CUDA cores.
  if (!operands_aligned && dtype != Dtype::fp32 && c.unaligned_ceiling > 0)
    return std::max(flops / (gpu.peak_flops(dtype) * c.unaligned_ceiling), memory_seconds(gpu, c, bytes));
  const double tiles = std::ceil(m / c.tile_m) * std::ceil(n / c.tile_n) * batch;
  const double splits = depth_splits(gpu, tiles, k);
  const double depth  = k / splits; // what one thread block sums
  double efficiency   = c.gemm_ceiling * tile_fill(m, c.tile_m) * tile_fill(n, c.tile_n) * depth / (depth + c.k_overhead);
  if (gpu.multiprocessors > 0) {
    // Tiles run in waves over the multiprocessors; a last wave that is partly empty still takes a whole wave.
    const double waves = std::ceil(tiles * splits / gpu.multiprocessors);
    efficiency *= tiles * splits / (waves * gpu.multiprocessors);
  }
  return std::max(flops / (gpu.peak_flops(dtype) * efficiency), memory_seconds(gpu, c, bytes));
}

double attention_seconds(const GpuSpec& gpu, const KernelConstants& c, models::AttentionKernel kernel, double flops,
                         double sequence, double head_size, bool backward, Dtype dtype, double bytes)
{
  const AttentionSpeed speed = attention_speed(kernel, gpu);
  if (!speed.fused) {
    // Op by op over the whole square: the two products per head (four in backward, twice the forward's FLOPs
    // where FlashAttention's backward is counted at 2.5), and every score through memory.
    const double heads  = attention_rows(flops, sequence, head_size, backward);
    const double passes = backward ? 2 : 1;
    const double products = passes * (matmul_seconds(gpu, c, sequence, sequence, head_size, heads, dtype) +
                                      matmul_seconds(gpu, c, sequence, head_size, sequence, heads, dtype));
    const double scores = passes * speed.score_bytes * heads * sequence * sequence * dtype_bytes(dtype) / 2.0;
    return products + memory_seconds(gpu, c, scores + bytes);
  }
  const double ceiling = attention_fitted(c) ? (backward ? c.attention_backward_ceiling : c.attention_ceiling)
                                : (backward ? speed.backward_ceiling : speed.forward_ceiling);
  if (ceiling <= 0 || head_size <= 0)
    return std::max(flops / (gpu.peak_flops(dtype) * c.gemm_ceiling), memory_seconds(gpu, c, bytes));
  // A causal kernel computes the key tiles at or left of the diagonal only: of n x n tiles, n (n + 1) / 2.
  const double tiles    = std::max(1.0, std::ceil(sequence / speed.key_tile));
  const double computed = flops * (tiles + 1) / (2 * tiles);
  const double depth    = c.attention_softmax_depth > 0 ? c.attention_softmax_depth : speed.softmax_depth;
  const double keys       = sequence * (tiles + 1) / (2 * tiles); // what a query tile sees, on average
  const double efficiency = ceiling * head_size / (head_size + depth) * keys / (keys + speed.key_overhead);
  const double seconds    = computed / (gpu.peak_flops(dtype) * efficiency);
  return std::max(seconds * causal_imbalance(gpu, attention_rows(flops, sequence, head_size, backward), tiles),
                  memory_seconds(gpu, c, bytes));
}

double memory_seconds(const GpuSpec& gpu, const KernelConstants& c, double bytes)
{
  return bytes / (gpu.memory_bandwidth_bytes_per_s * c.memory_efficiency);
}

double unvectorized_seconds(const GpuSpec& gpu, const KernelConstants& c, double bytes)
{
  const double issued = c.unvectorized_bytes_per_sm_s * gpu.multiprocessors;
  return std::max(memory_seconds(gpu, c, bytes), issued > 0 ? bytes / issued : 0.0);
}

double kernel_seconds(const GpuSpec& gpu, const KernelConstants& c, const models::Kernel& kernel, Dtype dtype)
{
  const double bytes = kernel.bytes * dtype_bytes(dtype) / 2.0;
  switch (kernel.kind) {
  case models::Kernel::Kind::matmul: {
    // A weight gradient (in features x out features, over the tokens) has its rows among its leading
    // dimensions and its depth, the tokens, not: X^T dY reads X's rows of k and dY's of n.
    const bool operands = kernel.name.ends_with(".wgrad")
                              ? whole_vectors(kernel.m, dtype) && whole_vectors(kernel.n, dtype)
                              : whole_vectors(kernel.n, dtype) && whole_vectors(kernel.k, dtype);
    if (kernel.fp8 && gpu.peak_flops_fp8 > 0) { // the same tiles and waves at the fp8 rate
      GpuSpec fp8          = gpu;
      fp8.peak_flops_fp16  = gpu.peak_flops_fp8;
      KernelConstants c8   = c;
      c8.gemm_ceiling      = fp8_gemm_ceiling(c);
      return matmul_seconds(fp8, c8, kernel.m, kernel.n, kernel.k, kernel.batch, Dtype::bf16, operands);
    }
    return matmul_seconds(gpu, c, kernel.m, kernel.n, kernel.k, kernel.batch, dtype, operands);
  }
  case models::Kernel::Kind::fused_attention:
    return attention_seconds(gpu, c, attention_run(kernel.attention, gpu, kernel.explicit_mask).kernel, kernel.flops,
                             kernel.m, kernel.k, kernel.backward, dtype, bytes);
  case models::Kernel::Kind::stream:
    return c.elementwise_scale *
           (kernel.vectorized ? memory_seconds(gpu, c, bytes) : unvectorized_seconds(gpu, c, bytes));
  }
  return 0;
}

double kernels_seconds(const GpuSpec& gpu, const KernelConstants& c, const std::vector<models::Kernel>& kernels,
                       Dtype dtype)
{
  double device = 0, launched = 0;
  for (const auto& kernel : kernels) {
    device += kernel_seconds(gpu, c, kernel, dtype);
    launched += kernel.launches;
  }
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
