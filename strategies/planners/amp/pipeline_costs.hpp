#pragma once
/// AMP §3.4's per-layer and per-boundary costs of a 3D plan whose degrees, placement and batch are fixed but
/// whose stage boundaries are not: what the layer assignment (layer_assignment.hpp) optimises over.

#include "costmodel/compute.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/planners/amp/layer_assignment.hpp"

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
  /// One micro-batch's tensor-parallel collectives (none when `profiled`) and expert-parallel all-to-alls of
  /// `layer` over `group` and `experts`, forward and backward.
  double communication_seconds(const models::Layer& layer, const std::vector<int>& group,
                               const std::vector<int>& experts, int mb, bool profiled) const;

  const Plan& shape_;
  const Problem& problem_;
  std::vector<std::vector<double>> prefix_s_; ///< [stage][layer]: seconds of layers [0, layer) on that stage
  std::vector<double> stage_capacity_bytes_;  ///< smallest memory of a device of each stage
};

} // namespace hetsim::strategies
