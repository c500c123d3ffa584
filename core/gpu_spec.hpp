#pragma once
/// Datasheet figures of one GPU type, and the built-in catalog of common ones.

#include "core/dtype.hpp"

#include <string>
#include <vector>

namespace hetsim {

struct GpuSpec {
  std::string name;
  double memory_bytes                 = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double peak_flops_fp16              = 0; ///< dense tensor-core peak, also used for bf16
  double peak_flops_fp32              = 0;
  /// Streaming multiprocessors (AMD: compute units, Ascend: AI cores) that a matrix product's tiles are spread
  /// over in waves; 0 when unknown, and then no wave is left part-empty.
  int multiprocessors = 0;
  /// Whether the tensor cores take bfloat16 (Ampere and later, CDNA2); Volta and Turing have fp16 only.
  bool bf16 = true;
  /// CUDA compute capability as major x 10 + minor (a V100 is 70, an H100 90), which decides the kernels a
  /// library will run on it (FlashAttention 2 needs 80 or more); 0 when not an NVIDIA GPU or unknown.
  int compute_capability = 0;
  /// Dense fp8 (E4M3/E5M2) and fp4 tensor-core peaks; 0 where the GPU has no such tensor cores (fp8 from Ada,
  /// Hopper and CDNA3 on, fp4 from Blackwell and CDNA4 on).
  double peak_flops_fp8 = 0;
  double peak_flops_fp4 = 0;

  double peak_flops(Dtype dtype) const { return dtype == Dtype::fp32 ? peak_flops_fp32 : peak_flops_fp16; }
};

/// The built-in catalog (see shared/data/gpus.md), in a stable order.
const std::vector<GpuSpec>& gpu_catalog();
/// Whether `gpu` can train in `dtype` (bf16 needs bf16 tensor cores, fp32 an fp32 peak).
bool supports_dtype(const GpuSpec& gpu, Dtype dtype);
/// Looks a GPU up by catalog name or alias ("A40-48GB", "V100"); nullptr when unknown.
const GpuSpec* find_catalog_gpu(const std::string& name);
/// The catalog GPU a driver's device name stands for ("NVIDIA H100 80GB HBM3", as CUDA and the PyTorch profiler
/// name it), or nullptr.
const GpuSpec* find_gpu_by_device_name(const std::string& device);
/// The short names that mean a catalog entry ("V100" for "V100-SXM2-16GB"), in a stable order.
std::vector<std::string> catalog_gpu_aliases(const std::string& name);
/// Comma-separated catalog names, for error messages.
std::string catalog_gpu_names();

} // namespace hetsim
