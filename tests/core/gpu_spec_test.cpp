// The GPU catalog: names, the device names drivers report, and the low-precision peaks each generation has.

#include "core/gpu_spec.hpp"
#include "core/units.hpp"

#include <doctest/doctest.h>

#include <string>

using hetsim::find_catalog_gpu;
using hetsim::find_gpu_by_device_name;
using hetsim::units::kTera;

namespace {

std::string device(const std::string& reported)
{
  const hetsim::GpuSpec* gpu = find_gpu_by_device_name(reported);
  return gpu ? gpu->name : "";
}

} // namespace

TEST_CASE("a driver's device name finds its catalog GPU, the longer names first")
{
  CHECK(device("NVIDIA H200") == "H200-SXM-141GB");
  CHECK(device("NVIDIA H20") == "H20");
  CHECK(device("NVIDIA GH200 480GB") == "GH200-96GB");
  CHECK(device("NVIDIA B200") == "B200");
  CHECK(device("NVIDIA GB200") == "GB200");
  CHECK(device("NVIDIA B300 SXM6 AC") == "B300");
  CHECK(device("NVIDIA GB300") == "GB300");
  CHECK(device("NVIDIA GeForce RTX 5090") == "RTX-5090");
  CHECK(device("AMD Instinct MI300X") == "MI300X");
  CHECK(device("AMD Instinct MI325X") == "MI325X");
  CHECK(device("AMD Instinct MI355X") == "MI355X");
  CHECK(device("NVIDIA H100 80GB HBM3") == "H100-SXM5-80GB");
  CHECK(device("Some Other Accelerator") == "");
  // Parts the catalog does not hold are not taken for their neighbours.
  CHECK(device("NVIDIA L40") == "");
  CHECK(device("NVIDIA L40S") == "L40S");
  CHECK(device("NVIDIA L4") == "L4");
  CHECK(device("NVIDIA H20 141GB") == "");
  CHECK(device("NVIDIA GeForce RTX 5090 Laptop GPU") == "");
}

TEST_CASE("fp8 peaks where the tensor cores have fp8, fp4 from Blackwell and CDNA4 on, each twice the one before")
{
  for (const std::string none : {"V100", "T4", "A100-80GB", "A10", "A40", "MI250X"}) {
    CAPTURE(none);
    CHECK(find_catalog_gpu(none)->peak_flops_fp8 == 0);
  }
  for (const std::string name : {"L4", "L40S", "RTX-4090", "H100", "H200", "H20", "B200", "B300", "GB200", "GB300", "RTX-5090", "MI300X",
                           "MI325X", "MI355X"}) {
    CAPTURE(name);
    const hetsim::GpuSpec& gpu = *find_catalog_gpu(name);
    // Every datasheet doubles the 16-bit dense peak for fp8 (GeForce's fp32-accumulate rates alike; the L40S's 733
    // against 362 is NVIDIA's rounding).
    CHECK(gpu.peak_flops_fp8 == doctest::Approx(2 * gpu.peak_flops_fp16).epsilon(0.015));
    CHECK(gpu.memory_bandwidth_bytes_per_s > 0);
  }
  for (const std::string name : {"B200", "B300", "GB200", "GB300", "RTX-5090", "MI355X"}) {
    CAPTURE(name);
    CHECK(find_catalog_gpu(name)->peak_flops_fp4 >= 2 * find_catalog_gpu(name)->peak_flops_fp8);
  }
  CHECK(find_catalog_gpu("H100")->peak_flops_fp4 == 0);
  CHECK(find_catalog_gpu("B200")->peak_flops_fp16 == doctest::Approx(2250 * kTera));
  CHECK(find_catalog_gpu("B200")->compute_capability == 100);
  CHECK(find_catalog_gpu("B300")->compute_capability == 103);
  CHECK(find_catalog_gpu("MI300X")->compute_capability == 0);
}
