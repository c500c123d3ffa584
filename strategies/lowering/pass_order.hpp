#pragma once
/// The order in which a device of one pipeline stage runs its micro-batches' forward and backward passes.
/// The lowering issues tasks in this order and the estimate times the pipeline with it.

#include "costmodel/pipeline.hpp"
#include "strategies/plan/plan.hpp"

#include <vector>

namespace hetsim::strategies {

/// GPipe: every forward, then every backward from the last micro-batch. 1F1B: pp − stage − 1 warm-up forwards,
/// then one forward and one backward in turn, then the remaining backwards.
std::vector<costmodel::PipelineStep> pass_order(PipelineSchedule schedule, int pp, int stage, int micro_batches);

} // namespace hetsim::strategies
