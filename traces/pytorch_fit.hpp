#pragma once
/// Kernel constants of one GPU type fitted to PyTorch profiler traces (traces/pytorch_trace.hpp): every kernel
/// the trace shows with its recorded shapes is priced by the cost model (costmodel/kernel_time.hpp), and each
/// constant moves to where the kernels it governs agree with their measured time, within what the hardware
/// allows. What the traces cannot tell apart keeps the family's value, and the fit says so.

#include "core/gpu_spec.hpp"
#include "costmodel/kernel_time.hpp"
#include "traces/pytorch_trace.hpp"

#include <map>
#include <string>
#include <vector>

namespace hetsim::traces {

/// How well the fitted constants explain one kind of kernel: measured over modelled time, per kernel.
struct KindSpread {
  int kernels           = 0;
  double measured_s     = 0; ///< summed
  double modelled_s     = 0; ///< summed, with the fitted constants
  double median_error   = 0; ///< |modelled / measured - 1|, median over the kernels
  double p90_error      = 0; ///< the same, 90th percentile
};

struct PytorchFit {
  costmodel::KernelConstants constants;
  /// One line per constant: fitted from how many kernels, or kept at the family's value and why.
  std::vector<std::string> notes;
  /// by kind: "matmul", "matmul (unaligned)", "attention", "memory", "memory (unvectorized)"
  std::map<std::string, KindSpread> spread;
  /// Tokens per micro-batch (batch x sequence of the attention calls' queries): what the fit covered; 0 when
  /// the traces show no attention.
  double min_tokens = 0, max_tokens = 0;
};

/// Fits `gpu`'s constants to the kernels of `traces`, starting from `start` (the family's): the matrix-product
/// ceiling (aligned products that take 20 us or more, compute-bound in the model), the unaligned products'
/// ceiling, fused attention's ceiling, the memory efficiency (vectorized elementwise kernels moving 64 MB or more)
/// and the unvectorized elementwise rate (the others). A ceiling stays at most 1 (the unaligned one at most the
/// aligned one), the memory efficiency at most 1, the unvectorized rate at most the memory's. The
/// launch gap and the host's dispatch keep the family's value: the profiler's own bookkeeping slows the host
/// (about twice, on the shared GPT-2 traces), so its timings would overstate them.
PytorchFit fit_pytorch_traces(const GpuSpec& gpu, const std::vector<PytorchTrace>& traces,
                              costmodel::KernelConstants start);

} // namespace hetsim::traces
