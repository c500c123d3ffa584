#pragma once
/// Plan -> Schedule lowering.

#include "core/error.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <string>

namespace hetsim::strategies {

/// Lowers a plan (validated again): per device,
/// forward/backward of its stage for each micro-batch in GPipe order (all forwards, then the backwards in
/// reverse) or 1F1B order (min(pp - stage - 1, M) forwards, then one forward one backward, then the remaining
/// backwards); activation/gradient send/recv between consecutive stages of a replica and TP rank; with tp > 1,
/// each layer split into one piece per Megatron all-reduce (flops / tp), each piece followed by its all-reduce;
/// data-parallel synchronisation by ZeRO stage over each (stage, TP rank) group: 0 all-reduces gradient buckets
/// during the last backward, 1 reduce-scatters them there and all-gathers the parameters after the optimizer,
/// 2 reduce-scatters buckets during every backward, 3 gathers each layer before its forward and backward and
/// reduce-scatters it after its backward; then the optimizer step, which waits for all of that.
///
/// A stage computes in one task per micro-batch and direction unless something must interleave with it: TP
/// pieces, ZeRO-3 layers, or gradient buckets (the backward that synchronises them is split where a bucket
/// becomes ready, so its all-reduce overlaps the rest). Ids follow device order (rank order), then issue order.
/// A plan that lowers to more tasks than a replay can hold: the message names `origin` and what would fit.
class TooManyTasks : public InputError {
public:
  using InputError::InputError;
};

/// A plan that does not hold is an InputError naming `origin` (the plan's file when it has one); one that lowers
/// to more tasks than a replay can hold, TooManyTasks.
Schedule lower(const Plan& plan, const Problem& problem, const std::string& origin = "plan");

/// What the simulator replays: lower() restricted to the devices the largest fold replays (fold.hpp), every
/// collective keeping its real member count and the schedule holding the fold (for the simulator only, never an
/// executor); lower() itself when nothing folds or with `exact` (`--exact`), whose refusal of too many tasks then
/// says that folding would make the plan fit.
Schedule lower_for_replay(const Plan& plan, const Problem& problem, bool exact, const std::string& origin = "plan");

/// lower_for_replay with a fold already found (for a plan of the same shape): the steady-state replay's plan of
/// fewer micro-batches (sim/simulate/steady_state.hpp) folds as its full plan does, task for task.
Schedule lower_with_fold(const Plan& plan, const Problem& problem, std::shared_ptr<const Fold> fold);

/// Library calls one ZeRO-3 gather or reduce-scatter of `layer` takes under `plan`'s framework: with
/// gather_per_tensor one per parameter tensor the framework partitions (persistence_threshold elements or more),
/// at least one; else one.
int zero3_calls(const models::Layer& layer, const Plan& plan);
/// The share of `layer`'s parameters ZeRO-3 partitions under `plan`'s framework: those of tensors at or above
/// persistence_threshold, which its gathers and reduce-scatters move; the rest stay whole on every rank.
double zero3_partitioned_share(const models::Layer& layer, const Plan& plan);
/// What a ZeRO-3 gather of `layer` before its backward adds under full recompute: the tensors the framework
/// released after gathering them for the recompute (FrameworkSettings::max_reuse_distance) and gathers again for
/// their backward: its partitioned tensors after which, in the recompute and then in the backward, at least that
/// many parameters are used. `share` of the layer's parameters, in `calls` library calls (as zero3_calls counts).
struct Zero3Regather {
  int calls    = 0;
  double share = 0;
};
Zero3Regather zero3_backward_regather(const models::Layer& layer, const Plan& plan);
/// Layers a ZeRO-3 gather of `layer` may run ahead of the compute: prefetch_params over the layer's parameters
/// on a device (0 when the layer is larger: gathered only once the previous layer is done), or one without a
/// prefetch size.
int zero3_prefetch_layers(const models::Layer& layer, const Plan& plan);

/// Megatron's tensor-parallel all-reduces of `layer` for one micro-batch under `plan`: as many in backward as in
/// forward, and the forward's again when the backward recomputes it (6 per transformer block with recompute, 4
/// without); 0 without tensor parallelism. The lowering, the estimate and the planners' stage costs all count them
/// here.
int tensor_parallel_all_reduces(const models::Layer& layer, const Plan& plan);
/// Bytes one tensor-parallel rank sends across a pipeline boundary after `layer` for `samples` sequences, forward
/// (the activation) or back (its `gradient`). Each rank sends 1/tp of it under Megatron-LM's sequence
/// parallelism and DeepSpeed's partitioned sends; the receivers all-gather it over their tensor-parallel group,
/// which is left out. DeepSpeed's pipeline engine sends the rest of its boundary tuple whole: the GPT models' s x s
/// attention mask, cast to fp16 for NCCL, forward only (its gradient sends drop it).
double boundary_bytes(const models::Layer& layer, int seq_len, const Plan& plan, int samples, bool gradient);
/// Bytes of the tied embedding gradient one tensor-parallel rank of the first and of the last stage all-reduce
/// before the optimizer step: with pipelining and the framework's tied_embedding_all_reduce, when the output
/// projection shares the input embedding (the head's "logits" operator owns no weights); 0 otherwise.
double tied_embedding_gradient_bytes(const std::vector<models::Layer>& layers, const Plan& plan);

} // namespace hetsim::strategies
