#pragma once
/// Time of computation on one GPU: FLOPs over peak times an efficiency that grows with the batch.
/// Without calibration the efficiency is `max_efficiency * tokens / (tokens + half_efficiency_tokens)`,
/// a saturating curve; a Calibration replaces it per GPU type, and a LayerProfile anchors whole layers' times
/// wherever it covers the GPU and tensor-parallel degree (costmodel/layer_profile.hpp).

#include "core/dtype.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "models/workload.hpp"

#include <vector>

namespace hetsim::costmodel {

class ComputeModel {
public:
  explicit ComputeModel(const Calibration* calibration = nullptr, const LayerProfile* profile = nullptr)
      : calibration_(calibration), profile_(profile)
  {
  }

  /// Fraction of peak reached on a micro-batch of `tokens` tokens.
  double efficiency(const GpuSpec& gpu, double tokens) const;
  double compute_seconds(const GpuSpec& gpu, double flops, Dtype dtype, double tokens) const;
  /// Layers [first, end) of `workload` on one member of a `tp`-way tensor-parallel group, for a micro-batch of
  /// `samples` sequences: forward, or backward (plus the forward again with `recompute`). Profiled where the
  /// profile covers (gpu, tp); otherwise the roofline of the layers' FLOPs.
  double layers_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end, int tp,
                        int samples, Dtype dtype, bool backward, bool recompute = false) const;
  /// Whether a profile gives this GPU's layer times at `tp`; they then hold the layers' tensor-parallel
  /// all-reduces, which nothing may add again.
  bool profiled(const GpuSpec& gpu, int tp) const { return profile_ && profile_->covers(gpu.name, tp); }
  /// The same for every device of a tensor-parallel group of `cluster`: the group's all-reduces are then inside
  /// its layer times.
  bool profiled(const Cluster& cluster, const std::vector<int>& group, int tp) const;
  /// Adam step: reads and writes fp32 master weights, two moments and the 16-bit copy (memory bound).
  double optimizer_seconds(const GpuSpec& gpu, double params) const;

  /// The calibration behind the model, if any (its links' per-collective overheads serve the analytic estimate).
  const Calibration* calibration() const { return calibration_; }

  static constexpr double kMaxEfficiency       = 0.6;
  static constexpr double kHalfEfficiencyTokens = 512;
  static constexpr double kOptimizerBytesPerParam = 36; ///< 3 fp32 reads + 3 fp32 writes + one 16-bit write + grad read

private:
  const Calibration* calibration_;
  const LayerProfile* profile_;
};

} // namespace hetsim::costmodel
