#pragma once
/// Which attention kernel a GPU runs when a model asks for one, and how fast that kernel is there.
///
/// A stack names a kernel (models::AttentionKernel); the GPU's compute capability decides whether it runs, and
/// where it does not the framework's own fallback runs instead (SDPA's next backend, flash-attn's absence).
/// Each kernel's speed on each architecture is a ceiling over the key tiles it computes and a per-score softmax
/// cost, read off public measurements (attention_speed.cpp gives each source); a pair nobody measured borrows
/// the nearest measured one and says so.

#include "core/cluster.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/kernel_time.hpp"
#include "models/attention_kernel.hpp"
#include "models/workload.hpp"

#include <string>
#include <vector>

namespace hetsim::costmodel {

/// What runs for a request, and why it is not what was asked (empty when it is).
struct AttentionRun {
  models::AttentionKernel kernel = models::AttentionKernel::sdpa;
  std::string reason;
};

/// The kernel `gpu` runs when `asked` is asked for (framework_default must already be resolved: see
/// models::TransformerShape::attention), handed an explicit mask or not.
AttentionRun attention_run(models::AttentionKernel asked, const GpuSpec& gpu, bool explicit_mask);

/// How fast a fused attention kernel is on one architecture: its products reach `ceiling` of dense peak (forward
/// and backward) over the key tiles it computes, less each score's softmax, which costs `softmax_depth` head
/// dimensions' worth of products, and each query tile's fixed cost: efficiency = ceiling x head / (head +
/// softmax_depth) x keys / (keys + key_overhead).
struct AttentionSpeed {
  double forward_ceiling  = 0;
  double backward_ceiling = 0;
  double softmax_depth    = 0;
  /// Keys a causal kernel takes at a time: the tiles left of the diagonal are all it computes.
  double key_tile = 128;
  /// A query tile's fixed cost (loading it, the epilogue, the causal diagonal's imbalance) in keys' worth of
  /// work: a tile that sees K keys on average runs at K / (K + key_overhead) of the ceiling, which is why
  /// short sequences are slow.
  double key_overhead = 0;
  /// The kernel keeps no s x s matrix; an eager or fused-softmax kernel writes and rereads its scores, priced
  /// as products plus `score_bytes` per score and head (16-bit) through memory.
  bool fused = true;
  double score_bytes = 0;
  /// Where the figures come from; `measured` is false where they are another architecture's or kernel's.
  const char* source = "";
  bool measured      = false;
};

/// Whether a calibration fitted the attention ceilings of `c` (both directions), which then replace the kernel's.
inline bool attention_fitted(const KernelConstants& c)
{
  return c.attention_ceiling > 0 && c.attention_backward_ceiling > 0;
}

/// The speed of `kernel` (one that runs: attention_run's answer) on `gpu`'s architecture.
AttentionSpeed attention_speed(models::AttentionKernel kernel, const GpuSpec& gpu);

/// One line per GPU type of `cluster` whose GPUs run another attention kernel than `workload` asks for, or
/// whose kernel's speed there is carried over from another architecture: what runs, and why.
std::vector<std::string> attention_notes(const models::Workload& workload, const Cluster& cluster);

} // namespace hetsim::costmodel
