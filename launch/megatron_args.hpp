#pragma once
/// Megatron-LM's training arguments for a plan, by the names of Megatron-Core 0.13's
/// megatron/training/arguments.py: parallel degrees and rank order, batches, precision, recompute, optimizer
/// sharding, gradient buckets, the model's shape, and an uneven stage split as a pipeline layout.

#include "launch/plan_export.hpp"

#include <string>
#include <vector>

namespace hetsim::launch {

/// One argument: a flag and its value (empty for a switch).
struct Argument {
  std::string flag;
  std::string value;
};

/// The arguments; throws InputError for what Megatron-LM cannot run (the field and why).
std::vector<Argument> megatron_arguments(const ExportInputs& inputs);

/// "Et*4|t*5|t*3,L": the Megatron-Core pipeline layout of `blocks` transformer blocks per stage, the embedding
/// (E) on the first stage and the loss (L) on the last; "t*n" repeats a block n times, "|" separates stages
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py).
std::string pipeline_layout(const std::vector<int>& blocks);

} // namespace hetsim::launch
