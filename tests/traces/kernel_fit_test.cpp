/// Kernel constants fitted to compute tasks: timings made by known constants are explained by the fitted ones,
/// and the fit recovers the constants the timings can tell apart.

#include "core/gpu_spec.hpp"
#include "models/transformer.hpp"
#include "traces/kernel_fit.hpp"

#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace hetsim;
using namespace hetsim::traces;

namespace {

/// The kernels of one block's forward and backward over a grid of hidden sizes and micro-batches.
std::vector<std::vector<models::Kernel>> block_passes()
{
  std::vector<std::vector<models::Kernel>> passes;
  for (int hidden : {64, 256, 1024})
    for (int samples : {1, 4, 16})
      for (bool backward : {false, true}) {
        const models::Workload gpt =
            models::build_transformer(models::testing::gpt_shape(1, hidden, std::max(1, hidden / 64), 64, 128));
        std::vector<models::Kernel> kernels;
        for (const auto& op : gpt.layers[1].operators)
          for (auto& k : models::operator_kernels(op, 1, samples, backward))
            kernels.push_back(k);
        passes.push_back(std::move(kernels));
      }
  return passes;
}

} // namespace

TEST_CASE("fit_kernel_constants recovers the constants behind measured passes")
{
  const GpuSpec& v100 = *find_catalog_gpu("V100");
  costmodel::KernelConstants truth = costmodel::kernel_constants(v100);
  truth.gemm_ceiling      = 0.55;
  truth.memory_efficiency = 0.7;
  truth.launch_gap_s      = 8e-6;
  truth.host_dispatch_s   = 12e-6;
  std::mt19937 noise(7);
  std::uniform_real_distribution<double> jitter(-0.01, 0.01);
  std::vector<KernelTiming> timings;
  for (auto& kernels : block_passes()) {
    const double seconds = costmodel::kernels_seconds(v100, truth, kernels, Dtype::fp16) * (1 + jitter(noise));
    timings.push_back({std::move(kernels), seconds});
  }
  const costmodel::KernelConstants start = costmodel::kernel_constants(v100);
  const costmodel::KernelConstants fitted = fit_kernel_constants(v100, Dtype::fp16, timings, start);
  // Large products fix the ceiling; small passes the per-kernel costs.
  CHECK(fitted.gemm_ceiling == doctest::Approx(truth.gemm_ceiling).epsilon(0.05));
  double worst = 0;
  for (const auto& t : timings)
    worst = std::max(worst, std::abs(costmodel::kernels_seconds(v100, fitted, t.kernels, Dtype::fp16) / t.seconds - 1));
  CHECK(worst < 0.03);
  double start_worst = 0;
  for (const auto& t : timings)
    start_worst =
        std::max(start_worst, std::abs(costmodel::kernels_seconds(v100, start, t.kernels, Dtype::fp16) / t.seconds - 1));
  CHECK(start_worst > 0.2); // the family's constants were far off: the fit did the work
}

TEST_CASE("fit_kernel_constants stays inside what the hardware allows")
{
  // Passes 1.6 times faster than any ceiling allows (a GPU clocked above its datasheet, or a trace of other work):
  // the fitted ceiling and memory efficiency stop below 1 instead of following them (unbounded, the cuda
  // executor's H100 traces of GPT-2 medium had fitted a ceiling of 1.40).
  const GpuSpec& v100 = *find_catalog_gpu("V100");
  costmodel::KernelConstants start = costmodel::kernel_constants(v100);
  std::vector<KernelTiming> timings;
  for (auto& kernels : block_passes()) {
    costmodel::KernelConstants impossible = start;
    impossible.gemm_ceiling      = 1.6;
    impossible.memory_efficiency = 1.6;
    const double seconds = costmodel::kernels_seconds(v100, impossible, kernels, Dtype::fp16);
    timings.push_back({std::move(kernels), seconds});
  }
  const costmodel::KernelConstants fitted = fit_kernel_constants(v100, Dtype::fp16, timings, start);
  CAPTURE(fitted.gemm_ceiling);
  CAPTURE(fitted.memory_efficiency);
  CHECK(fitted.gemm_ceiling <= 1);
  CHECK(fitted.gemm_ceiling > 0.9); // pressed against the bound, not wandering off
  CHECK(fitted.memory_efficiency <= 1);
  CHECK(fitted.launch_gap_s >= 0);
  CHECK(fitted.host_dispatch_s >= 0);
}
