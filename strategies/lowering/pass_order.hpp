#pragma once
/// The order in which a device of one pipeline stage runs its micro-batches' forward and backward passes.
/// The lowering issues tasks in this order and the estimate times the pipeline with it.

#include "costmodel/pipeline.hpp"
#include "strategies/plan/plan.hpp"

#include <vector>

namespace hetsim::strategies {

/// GPipe: every forward, then every backward from the last micro-batch. 1F1B: pp − stage − 1 warm-up forwards,
/// then one forward and one backward in turn, then the remaining backwards. Zero bubble (ZB-H1): 1F1B's order of
/// forwards and input-gradient backwards, each backward from the stage's (stage + 1)-th on followed by the
/// oldest weight-gradient step not yet run, and the ones left at the end. With `virtual_stages` > 1 (1F1B
/// only), Megatron-LM's interleaved 1F1B: micro-batches go through the stage's chunks in groups of `group` (0:
/// pp; forward chunk 0 for micro-batches 0..group-1, then chunk 1 for the same, ...; backward from the last
/// chunk; the last group holds what is left), with (pp − stage − 1) x 2 + (virtual_stages − 1) x group warm-up
/// forwards, all of them when micro_batches == pp. Needs pp <= group <= micro_batches, as Megatron-LM does.
std::vector<costmodel::PipelineStep> pass_order(PipelineSchedule schedule, int pp, int stage, int micro_batches,
                                                int virtual_stages = 1, int group = 0);

} // namespace hetsim::strategies
