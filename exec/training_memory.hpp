#pragma once
/// What a rank keeps on its device through training besides its operations' own buffers, which executors hold
/// when profiling (Workload::hold_training_memory): its layers' parameters and gradients in the plan's dtype,
/// sharded as the schedule's ZeRO stage says (the rules of strategies/lowering/memory.hpp), and each forward's saved
/// activations until the backward of the same layer. Optimizer states are the executor's own optimizer buffers.
/// Shared by the executors so that they all hold the same.

#include "core/dtype.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"

#include <cstddef>
#include <map>
#include <utility>

namespace hetsim::exec {

struct ModelStateBytes {
  std::size_t parameters = 0;
  std::size_t gradients  = 0;
};

/// Parameters and gradients of the layers `rank` computes, after scaling (weights scale with the square of
/// hidden sizes).
ModelStateBytes model_state_bytes(const strategies::Schedule& schedule, const models::Workload& model, int rank,
                                  Dtype dtype, double scale);

/// Saved activations of one layer for `samples` sequences (a context-parallel rank's 1/cp of each): whole bytes
/// per sequence, so exactly linear in the batch as Algorithm 1's estimate assumes.
std::size_t saved_activation_bytes(const models::Layer& layer, int samples, int tp, bool sequence_parallel,
                                   Dtype dtype, double scale, int cp = 1);

/// Each forward's saved activations, held per (micro-batch, layer) in the executor's `Block`s.
template <class Block> class SavedActivations {
public:
  /// Before a compute task: a forward allocates its layers' activations with `allocate(bytes)` (a layer split
  /// into tensor-parallel pieces once).
  template <class Allocate>
  void begin(const strategies::Task& task, const models::Workload& model, const strategies::Schedule& schedule,
             Dtype dtype, double scale, Allocate&& allocate)
  {
    if (task.kind != strategies::TaskKind::forward)
      return;
    for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
      if (!held_.count({task.micro_batch, l}))
        held_.emplace(std::pair{task.micro_batch, l},
                      allocate(saved_activation_bytes(model.layers[l], task.samples, schedule.tp,
                                                      schedule.sequence_parallel, dtype, scale, schedule.cp)));
  }
  /// After a compute task: a backward is done with its layers' activations (a split one after its weight
  /// gradients).
  void end(const strategies::Task& task)
  {
    if (task.kind != strategies::TaskKind::backward || task.part == strategies::BackwardPart::input_gradients)
      return;
    for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
      held_.erase({task.micro_batch, l});
  }

private:
  std::map<std::pair<int, int>, Block> held_;
};

} // namespace hetsim::exec
