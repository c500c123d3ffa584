#pragma once
/// What a rank keeps on its device through training besides its operations' own buffers, which executors hold
/// when profiling (Workload::hold_training_memory): its layers' parameters and gradients in the plan's dtype,
/// sharded as the schedule's ZeRO stage says (the rules of strategies/lowering/memory.hpp), and each forward's saved
/// activations until the backward of the same layer. Optimizer states are the executor's own optimizer buffers.
/// Shared by the executors so that they all hold the same.

#include "core/dtype.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>

namespace hetsim::exec {

struct ModelStateBytes {
  std::size_t parameters = 0;
  std::size_t gradients  = 0;
  std::size_t optimizer  = 0; ///< Adam's states (and master weights where the dtype keeps them apart)
};

/// Parameters, gradients and optimizer states of the layers `rank` computes, after scaling (weights scale with
/// the square of hidden sizes), as strategies::plan_memory counts them (ZeRO's shards, torch.autocast's fp32
/// weights and cached casts).
ModelStateBytes model_state_bytes(const strategies::Schedule& schedule, const models::Workload& model, int rank,
                                  Dtype dtype, double scale);

/// Saved activations of one layer for `samples` sequences (a context-parallel rank's 1/cp of each): whole bytes
/// per sequence, so exactly linear in the batch as Algorithm 1's estimate assumes.
std::size_t saved_activation_bytes(const models::Layer& layer, int samples, int tp, bool sequence_parallel,
                                   Dtype dtype, double scale, int cp = 1);

/// What a forward keeps of layer `l` for `samples` sequences: its saved activations, or under full recompute
/// only its input (Schedule::recompute, for the layers models::recomputed covers).
std::size_t kept_activation_bytes(const models::Workload& model, const strategies::Schedule& schedule, int l,
                                  int samples, Dtype dtype, double scale);

/// Each forward's saved activations, held per (micro-batch, layer) in the executor's `Block`s; under full
/// recompute each forward's layer inputs, and through a recomputing backward the largest of its layers' saved
/// activations, which its rerun forwards make again one layer at a time.
template <class Block> class SavedActivations {
public:
  /// Before a compute task: a forward allocates what its layers keep with `allocate(bytes)`, a recomputing
  /// backward what its rerun forward saves (a layer split into tensor-parallel pieces once).
  template <class Allocate>
  void begin(const strategies::Task& task, const models::Workload& model, const strategies::Schedule& schedule,
             Dtype dtype, double scale, Allocate&& allocate)
  {
    if (task.kind == strategies::TaskKind::forward) {
      for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
        if (!held_.count(Key{task.micro_batch, l}))
          held_.emplace(Key{task.micro_batch, l},
                        allocate(kept_activation_bytes(model, schedule, l, task.samples, dtype, scale)));
      return;
    }
    if (task.kind != strategies::TaskKind::backward || !schedule.recompute || rerun_.count(task.micro_batch))
      return;
    // The task's layers are rerun and back-propagated one after another: one layer's saved activations at a time.
    std::size_t largest = 0;
    for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
      if (models::recomputed(model, l))
        largest = std::max(largest, saved_activation_bytes(model.layers[l], task.samples, schedule.tp,
                                                           schedule.sequence_parallel, dtype, scale, schedule.cp));
    if (largest > 0)
      rerun_.emplace(task.micro_batch, allocate(largest));
  }
  /// After a compute task: a backward is done with its layers' activations (a split one after its weight
  /// gradients).
  void end(const strategies::Task& task)
  {
    if (task.kind != strategies::TaskKind::backward || task.part == strategies::BackwardPart::input_gradients)
      return;
    for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
      held_.erase(Key{task.micro_batch, l});
    rerun_.erase(task.micro_batch);
  }

private:
  using Key = std::pair<int, int>; ///< micro-batch, layer
  std::map<Key, Block> held_;
  std::map<int, Block> rerun_; ///< per micro-batch, what a recomputing backward's rerun forward saves
};

} // namespace hetsim::exec
