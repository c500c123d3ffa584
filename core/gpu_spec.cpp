#include "core/gpu_spec.hpp"

#include "core/units.hpp"

#include <utility>

namespace hetsim {
namespace {

GpuSpec make(const char* name, double memory_gib, double bandwidth_gbytes, double fp16_tflops, double fp32_tflops,
             int multiprocessors, int compute_capability, bool bf16 = true)
{
  return GpuSpec{name,  memory_gib * units::kGiB, bandwidth_gbytes * units::kGBps, fp16_tflops * units::kTera,
                 fp32_tflops * units::kTera, multiprocessors, bf16, compute_capability};
}

/// `gpu` with its dense fp8 (and fp4) tensor peaks.
GpuSpec low_precision(GpuSpec gpu, double fp8_tflops, double fp4_tflops = 0)
{
  gpu.peak_flops_fp8 = fp8_tflops * units::kTera;
  gpu.peak_flops_fp4 = fp4_tflops * units::kTera;
  return gpu;
}

constexpr int kNotCuda = 0;

constexpr bool kNoBf16 = false;

// Short names people write in configs, mapped to the catalog entry they almost always mean.
const std::vector<std::pair<std::string, std::string>>& aliases()
{
  static const std::vector<std::pair<std::string, std::string>> list = {
      {"V100", "V100-SXM2-16GB"},        {"V100-16GB", "V100-SXM2-16GB"},     {"V100-32GB", "V100-SXM2-32GB"},
      {"A100", "A100-SXM4-40GB"},        {"A100-40GB", "A100-SXM4-40GB"},     {"A100-80GB", "A100-SXM4-80GB"},
      {"A800", "A800-SXM4-80GB"},        {"A40-48GB", "A40"},                 {"H100", "H100-SXM5-80GB"},
      {"H100-80GB", "H100-SXM5-80GB"},   {"H200", "H200-SXM-141GB"},          {"T4-16GB", "T4"},
      {"GH200", "GH200-96GB"},          {"A10-24GB", "A10"},                 {"L4-24GB", "L4"},
      {"L40S-48GB", "L40S"},
      {"MI250X-128GB", "MI250X"},        {"Ascend910", "Ascend-910"},
  };
  return list;
}

} // namespace

// Compute capabilities from NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus): Volta 7.0, Turing 7.5,
// A100 8.0, GA102 (A40, A10, RTX 30) 8.6, Ada 8.9, Hopper 9.0, Blackwell 10.0 (B200, GB200) and 10.3 (B300,
// GB300), GeForce Blackwell 12.0. Dense fp8 peaks: ml-engineering's TFLOPS table (H100, H200, L40S), NVIDIA's L4
// page (485 with sparsity), halved.
// Multiprocessors from the vendors' architecture whitepapers and product briefs (MI250X: 220 compute units
// over its two dies; Ascend 910: 32 Da Vinci cores). bf16: the Volta and Turing whitepapers list fp16 tensor
// cores only, and the Ascend 910's datasheet lists fp16 and int8; Ampere and later and CDNA2 and later take bf16.
const std::vector<GpuSpec>& gpu_catalog()
{
  static const std::vector<GpuSpec> catalog = {
      make("V100-SXM2-16GB", 16, 900, 125, 15.7, 80, 70, kNoBf16),
      make("V100-SXM2-32GB", 32, 900, 125, 15.7, 80, 70, kNoBf16),
      make("V100-PCIe-16GB", 16, 900, 112, 14, 80, 70, kNoBf16),
      make("V100-PCIe-32GB", 32, 900, 112, 14, 80, 70, kNoBf16),
      make("V100S-PCIe-32GB", 32, 1134, 130, 16.4, 80, 70, kNoBf16),
      make("T4", 16, 320, 65, 8.1, 40, 75, kNoBf16),
      make("A100-SXM4-40GB", 40, 1555, 312, 19.5, 108, 80),
      make("A100-SXM4-80GB", 80, 2039, 312, 19.5, 108, 80),
      make("A100-PCIe-40GB", 40, 1555, 312, 19.5, 108, 80),
      make("A100-PCIe-80GB", 80, 1935, 312, 19.5, 108, 80),
      make("A800-SXM4-80GB", 80, 2039, 312, 19.5, 108, 80),
      make("A40", 48, 696, 149.7, 37.4, 84, 86),
      // Ada and Ampere inference cards people also train on (NVIDIA L4, L40S and A10 datasheets, dense tensor
      // peaks without sparsity; SMs from the Ada and GA102 whitepapers).
      make("A10", 24, 600, 125, 31.2, 72, 86),
      low_precision(make("L4", 24, 300, 121, 30.3, 58, 89), 242.5),
      low_precision(make("L40S", 48, 864, 362, 91.6, 142, 89), 733),
      // What cudaMemGetInfo gives a process on an H100 SXM 80GB (PyTorch's out-of-memory message: "a total
      // capacity of 79.18 GiB"; tests/data/h100), not the datasheet's round 80.
      low_precision(make("H100-SXM5-80GB", 79.18, 3350, 989, 67, 132, 90), 1979),
      low_precision(make("H100-PCIe-80GB", 80, 2000, 756, 51, 114, 90), 1513),
      // Likewise on an H200 SXM: "a total capacity of 139.80 GiB" (tests/data/h200), more than the datasheet's
      // 141 GB (131.3 GiB) says.
      low_precision(make("H200-SXM-141GB", 139.80, 4800, 989, 67, 132, 90), 1979),
      // GH200 Grace Hopper's GPU: the H100's compute (NVIDIA GH200 datasheet: 989 TFLOP/s dense fp16/bf16, 67
      // fp32) with 96 GB of HBM3 at 4 TB/s, or 144 GB of HBM3e at 4.9 TB/s; decimal like the H200.
      GpuSpec{"GH200-96GB", 96e9, 4000 * units::kGBps, 989 * units::kTera, 67 * units::kTera, 132, true, 90,
              1979 * units::kTera},
      GpuSpec{"GH200-144GB", 144e9, 4900 * units::kGBps, 989 * units::kTera, 67 * units::kTera, 132, true, 90,
              1979 * units::kTera},
      // Hopper for the Chinese market (NVIDIA's MIG guide: 96 GB, compute capability 9.0); its bandwidth, peaks
      // and 78 SMs are third parties' (no NVIDIA datasheet is public): huggingface.co/hardware/h20.
      low_precision(make("H20", 96, 4000, 148, 44, 78, 90), 296),
      // Blackwell, per GPU, dense (ml-engineering compute/accelerator/README.md @744d01e, its TFLOPS and memory
      // tables from NVIDIA's DGX B200/B300 datasheets and GB200/GB300 NVL72 pages). NVIDIA's "GB" is read as GiB:
      // an H100's "80 GB" is 80 GiB of which the driver leaves 79.18 to a process, an H200's "141 GB" 139.8; how
      // much of a Blackwell's a process gets is unmeasured. Compute capabilities: developer.nvidia.com/cuda-gpus.
      // SMs: 148, PyTorch's multi_processor_count on a B200 and on a B300 (ml-engineering training/performance);
      // NVIDIA publishes none for GB200 and GB300, whose GPUs are the same dies: 148 too (the full die has 160).
      low_precision(make("B200", 180, 8000, 2250, 80, 148, 100), 4500, 9000),
      low_precision(make("B300", 288, 8000, 2250, 80, 148, 103), 4500, 12600),
      low_precision(make("GB200", 186, 8000, 2500, 80, 148, 100), 5000, 10000),
      low_precision(make("GB300", 288, 8000, 2500, 80, 148, 103), 5000, 15000),
      // fp8 with fp32 accumulate, as its 16-bit peak is (NVIDIA Ada whitepaper, appendix: 330.3 dense).
      low_precision(make("RTX-4090", 24, 1008, 165, 82.6, 128, 89), 330.3),
      // GeForce Blackwell: its 16-bit products at half the fp16-accumulate rate with fp32 accumulation, as
      // GeForce runs them in training (fp8 likewise); fp4 is NVIDIA's 3,352 sparse "AI TOPS" halved, whether
      // GeForce halves it again for fp32 accumulation is not published. SMs, bandwidth and fp32 from third parties
      // (21,760 CUDA cores / 128).
      low_precision(make("RTX-5090", 32, 1792, 209.5, 104.8, 170, 120), 419, 1676),
      make("RTX-3060", 12, 360, 51, 12.7, 28, 86),
      make("MI250X", 128, 3277, 383, 47.9, 220, kNotCuda),
      // CDNA3 and CDNA4 (ml-engineering's tables from AMD's product pages, dense; fp32 is the matrix rate; compute
      // units and memory in GiB from ROCm's gpu-specs reference).
      low_precision(make("MI300X", 192, 5300, 1300, 163.4, 304, kNotCuda), 2610),
      low_precision(make("MI325X", 256, 6000, 1300, 163.4, 304, kNotCuda), 2610),
      low_precision(make("MI355X", 288, 8000, 2500, 157.3, 256, kNotCuda), 5000, 10100),
      make("Ascend-910", 32, 1200, 320, 0, 32, kNotCuda, kNoBf16),
  };
  return catalog;
}

bool supports_dtype(const GpuSpec& gpu, Dtype dtype)
{
  switch (dtype) {
  case Dtype::bf16: return gpu.bf16;
  case Dtype::fp32: return gpu.peak_flops_fp32 > 0; // the Ascend 910 lists no fp32 peak
  case Dtype::fp16: return true;
  }
  return false;
}

const GpuSpec* find_catalog_gpu(const std::string& name)
{
  std::string canonical = name;
  for (const auto& [alias, target] : aliases())
    if (alias == name)
      canonical = target;
  for (const auto& spec : gpu_catalog())
    if (spec.name == canonical)
      return &spec;
  return nullptr;
}

const GpuSpec* find_gpu_by_device_name(const std::string& device)
{
  auto has = [&](const char* part) { return device.find(part) != std::string::npos; };
  const char* name = nullptr;
  if (has("GH200"))
    name = has("144") ? "GH200-144GB" : "GH200-96GB";
  else if (has("GB200") || has("GB300"))
    name = has("GB200") ? "GB200" : "GB300";
  else if (has("B200") || has("B300"))
    name = has("B200") ? "B200" : "B300";
  else if (has("MI300X") || has("MI325X") || has("MI355X"))
    name = has("MI300X") ? "MI300X" : (has("MI325X") ? "MI325X" : "MI355X");
  else if (has("5090") && !has("Laptop") && !has("5090 D"))
    name = "RTX-5090";
  else if (has("H100"))
    name = has("PCIe") ? "H100-PCIe-80GB" : "H100-SXM5-80GB";
  else if (has("H200"))
    name = "H200-SXM-141GB";
  else if (has("H20") && !has("141")) // the 141 GB H20 is another part
    name = "H20";
  else if (has("A100"))
    name = has("80GB") ? (has("PCIe") ? "A100-PCIe-80GB" : "A100-SXM4-80GB")
                       : (has("PCIe") ? "A100-PCIe-40GB" : "A100-SXM4-40GB");
  else if (has("V100"))
    name = has("32GB") ? "V100-SXM2-32GB" : "V100-SXM2-16GB";
  else if (has("T4"))
    name = "T4";
  else if (has("A40"))
    name = "A40";
  else if (has("L40S"))
    name = "L40S";
  else if (has("L4") && !has("L40")) // an L40 is neither an L4 nor an L40S
    name = "L4";
  else if (has("A10"))
    name = "A10";
  return name ? find_catalog_gpu(name) : nullptr;
}

std::vector<std::string> catalog_gpu_aliases(const std::string& name)
{
  std::vector<std::string> names;
  for (const auto& [alias, target] : aliases())
    if (target == name)
      names.push_back(alias);
  return names;
}

std::string catalog_gpu_names()
{
  std::string names;
  for (const auto& spec : gpu_catalog())
    names += (names.empty() ? "" : ", ") + spec.name;
  return names;
}

} // namespace hetsim
