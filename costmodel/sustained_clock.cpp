#include "costmodel/sustained_clock.hpp"

namespace hetsim::costmodel {

// B200 (1,000 W): FlashAttention-4's bf16 forward ran at 1,450 TFLOP/s over iterations 10-19 and at 1,237 over
// iterations 70-79 of back-to-back calls, the SM clock falling from 1,965 to about 1,580 MHz once some 5 ms of
// compute had run without gaps (flashinfer-ai/flashinfer PR #2899, March 2026): 0.853. A training step's
// products and attention run back to back for seconds; ml-engineering's MAMF sweep, whose figures set the
// Blackwell ceilings (kernel_time.cpp), times each shape for 100 calls after 50, tens of milliseconds. The GB200
// (1,200 W) is the same die, unmeasured: carried over. Blackwell Ultra (B300 at 1,100 W, GB300 at 1,400 W) is
// left at the sweep's figures: nothing measured its sustained clock (the one choice NVIDIA's published rows
// informed: its GB300 rows come within 6% without it, experiments/nemo_fp8).
constexpr double kB200SustainedOverBurst = 1237.0 / 1450.0;

double sustained_clock_fraction(const GpuSpec& gpu)
{
  const std::string& n = gpu.name;
  return n.starts_with("B200") || n.starts_with("GB200") ? kB200SustainedOverBurst : 1.0;
}

} // namespace hetsim::costmodel
