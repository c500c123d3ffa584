#pragma once
/// Time of computation on one GPU. A layer runs as its operators (costmodel/kernel_time.hpp): matrix products
/// at a shape-dependent efficiency, memory-bound kernels at the bandwidth, a launch gap per kernel, and never
/// faster than the host issues them; a Calibration's fitted kernel constants replace the family's. One with
/// only fitted efficiencies for a GPU type replaces that by FLOPs over the fitted efficiency, and a LayerProfile
/// anchors whole layers' times wherever it covers the GPU and tensor-parallel degree (costmodel/layer_profile.hpp).

#include "core/dtype.hpp"
#include "core/gpu_spec.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "models/workload.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace hetsim::costmodel {

class ComputeModel {
public:
  explicit ComputeModel(const Calibration* calibration = nullptr, const LayerProfile* profile = nullptr)
      : calibration_(calibration), profile_(profile)
  {
  }

  /// `flops` of work without a layer to describe it, on a micro-batch of `tokens` tokens: at the calibrated
  /// efficiency, or as one matrix product of `tokens` rows with as many columns as inner dimension.
  double compute_seconds(const GpuSpec& gpu, double flops, Dtype dtype, double tokens) const;
  /// Layers [first, end) of `workload` on one member of a `tp`-way tensor-parallel group, for a micro-batch of
  /// `samples` sequences (fractional for a context-parallel rank's share of them): forward, or backward (plus the
  /// forward again with `recompute`). Profiled where the
  /// profile covers (gpu, tp); otherwise the layers' operators (a layer list's layer, which has none, as one
  /// matrix product of its FLOPs), the replicated ones on 1/tp of the sequence with `sequence_parallel`.
  double layers_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end, int tp,
                        double samples, Dtype dtype, bool backward, bool recompute = false,
                        bool sequence_parallel = false) const;
  /// Of layers_seconds' backward (no recompute), the part that computes weight gradients (a zero-bubble
  /// schedule's second backward step): each layer's backward times the model's share of it in its linear
  /// operators' weight-gradient products (half where the layer is priced by its FLOPs alone: a layer list's
  /// layer, or any layer under layer-level calibration, whose backward is twice its forward).
  double weight_gradient_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end, int tp,
                                 double samples, Dtype dtype, bool sequence_parallel = false) const;
  /// The forward of layers [first, end)'s selectively recomputed operators (as the framework's policy set them:
  /// non-fused attention's core under Megatron's), which a backward under selective recompute runs again first.
  double selective_recompute_seconds(const GpuSpec& gpu, const models::Workload& workload, int first, int end,
                                     int tp, double samples, Dtype dtype, bool sequence_parallel = false) const;
  /// Whether a profile gives this GPU's layer times at `tp`; they then hold the layers' tensor-parallel
  /// all-reduces, which nothing may add again.
  bool profiled(const GpuSpec& gpu, int tp) const { return profile_ && profile_->covers(gpu.name, tp); }
  /// The same for every device of a tensor-parallel group of `cluster`: the group's all-reduces are then inside
  /// its layer times.
  bool profiled(const Cluster& cluster, const std::vector<int>& group, int tp) const;
  /// Adam step: reads and writes fp32 master weights, two moments and the 16-bit copy (memory bound).
  double optimizer_seconds(const GpuSpec& gpu, double params) const;

  /// The kernel constants of `gpu`: fitted by the calibration, or its family's (kernel_time.hpp).
  KernelConstants constants(const GpuSpec& gpu) const;
  /// The same for `workload`'s layers: with the elementwise scale a calibration fitted to its model type, where
  /// it runs as eager PyTorch (the traces' stack).
  KernelConstants constants(const GpuSpec& gpu, const models::Workload& workload) const;

  /// The calibration behind the model, if any (its links' per-collective overheads serve the analytic estimate).
  const Calibration* calibration() const { return calibration_; }

  static constexpr double kOptimizerBytesPerParam = 36; ///< 3 fp32 reads + 3 fp32 writes + one 16-bit write + grad read

private:
  /// One layer's pass by the model (calibrated efficiency or operators), `samples` possibly fractional: the
  /// curve that profiles are scaled along.
  double modelled_layer_seconds(const GpuSpec& gpu, const models::Workload& workload, int layer, int tp,
                                double samples, Dtype dtype, bool backward, bool sequence_parallel,
                                bool weight_gradients_only = false) const;

  /// Operator-priced passes already computed: planners and the estimate ask for the same ones many times.
  /// Shared by copies; the mutex lets parallel searches share a model.
  /// What a pass's price depends on: the GPU (its name decides its constants) and its figures, the layer (its
  /// address, and its FLOPs against a reused address), tp, batch, dtype, direction, sequence parallelism and
  /// whether only the weight gradients count.
  using PassKey = std::tuple<std::string, double, double, int, const models::Layer*, double, int, double, Dtype, bool,
                             bool, bool>;
  struct PassCache {
    std::mutex mutex;
    std::map<PassKey, double> seconds;
  };

  const Calibration* calibration_;
  const LayerProfile* profile_;
  std::shared_ptr<PassCache> cache_ = std::make_shared<PassCache>();
};

} // namespace hetsim::costmodel
