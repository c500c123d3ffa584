#pragma once
/// AMP §3.4's per-layer and per-boundary costs of a 3D plan whose degrees, placement and batch are fixed but
/// whose stage boundaries are not: what the layer assignment (layer_assignment.hpp) optimises over.

#include "costmodel/compute.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/planners/amp/layer_assignment.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace hetsim::strategies {

class PipelineCosts {
public:
  /// `shape` gives everything but stage_starts. `problem` and `compute` must outlive this object.
  PipelineCosts(const Plan& shape, const Problem& problem, const costmodel::ComputeModel& compute);

  /// Forward + backward of one micro-batch of layers [first, end) on stage `stage`: its slowest member over
  /// replicas and tensor-parallel ranks, each on its own GPU, with the layers' tensor-parallel all-reduces and
  /// expert-parallel all-to-alls.
  /// +infinity when the layers' states and activations do not fit on some device of the stage.
  double stage_seconds(int stage, int first, int end) const;
  /// Activations forward and gradients backward across the cut after `stage` at layer `cut`, every replica at
  /// once (they share NICs and WAN links).
  double boundary_seconds(int stage, int cut) const;
  StageCostModel model() const;

  /// stage_seconds without the memory check.
  double compute_seconds(int stage, int first, int end) const
  {
    return prefix_s_[stage][end] - prefix_s_[stage][first];
  }
  /// Whether layers [first, end) fit on every device of `stage` (states, activations in flight, workspace).
  bool fits(int stage, int first, int end) const;

private:
  /// Forward + backward of one micro-batch of `mb` sequences through each layer on `gpu`, without communication;
  /// `kinds` is models::layer_kinds of the layers.
  std::vector<double> layer_compute_seconds(const GpuSpec& gpu, int mb, const std::vector<int>& kinds,
                                            const costmodel::ComputeModel& compute) const;
  /// One micro-batch's tensor-parallel collectives (none when `profiled`) and expert-parallel all-to-alls of
  /// `layer` over `group` and `experts`, forward and backward.
  double communication_seconds(const models::Layer& layer, const std::vector<int>& group,
                               const std::vector<int>& experts, int mb, bool profiled) const;

  const Plan& shape_;
  const Problem& problem_;
  std::vector<std::vector<double>> prefix_s_; ///< [stage][layer]: seconds of layers [0, layer) on that stage
  std::vector<double> stage_capacity_bytes_;  ///< smallest memory of a device of each stage
  std::vector<double> data_parallel_bytes_;   ///< per stage: its data-parallel communicator's NCCL bytes
  std::vector<int> kinds_;                    ///< models::layer_kinds of the workload
  /// (stage, activation bytes, gradient bytes) -> boundary_seconds: the layer assignment asks for every cut.
  mutable std::map<std::tuple<int, double, double>, double> boundary_s_;
};

} // namespace hetsim::strategies
