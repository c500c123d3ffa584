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
  bool shell_expanded = false; ///< the value is written as it is, for the shell to expand ("$DIR/ds_config.json")
};

/// The arguments; throws InputError for what Megatron-LM cannot run (the field and why).
std::vector<Argument> megatron_arguments(const ExportInputs& inputs);

/// A float argument as Python's float() reads it back exactly: 0.25, 8, 0.707.
std::string format_arg(double value);

/// The model's transformer shape as Megatron-LM's GPT model code builds it, shared by Megatron-LM and
/// Megatron-DeepSpeed (`who` names the one in messages): throws InputError, naming the model field, for a layer
/// list, unfused GeLU, BERT, a GeLU-gated or ReLU MLP, a parallel residual, offset learned positions, ALiBi, and
/// a fused attention kernel other than `attention` (the one the launched model runs) or a loss other than
/// Megatron-LM's vocabulary-parallel cross entropy.
const models::TransformerShape& megatron_gpt_shape(const ExportInputs& inputs, const std::string& who,
                                                   models::AttentionKernel attention);

/// --num-layers, --hidden-size, --ffn-hidden-size, --num-attention-heads and, for a head other than hidden /
/// heads, --kv-channels: flags Megatron-LM's and Megatron-DeepSpeed's parsers share.
void add_gpt_dimensions(std::vector<Argument>& args, const models::TransformerShape& shape);
/// --swiglu, --normalization (spelt `rms_norm`: "RMSNorm" in Megatron-LM, "rmsnorm" in Megatron-DeepSpeed),
/// --disable-bias-linear and --untie-embeddings-and-output-weights, as the shape has them.
void add_gpt_block_flags(std::vector<Argument>& args, const models::TransformerShape& shape,
                         const std::string& rms_norm);

/// --recompute-granularity selective when the plan asks for selective recompute: Megatron's core attention rerun
/// (its default --recompute-modules), shared by Megatron-LM and Megatron-DeepSpeed (`who`); throws InputError
/// naming framework.selective for a plan simulated under another policy.
void add_selective_recompute(std::vector<Argument>& args, const ExportInputs& inputs, const std::string& who);

/// Throws InputError "model.json: FIELD: WHY; export --format deepspeed or torchrun": a model field a Megatron
/// model would build otherwise than it was simulated, and the exports that run Hugging Face's modules as simulated.
[[noreturn]] void refuse_model_field(const ExportInputs& inputs, const std::string& field, const std::string& why);

/// "Et*4|t*5|t*3,L": the Megatron-Core pipeline layout of `blocks` transformer blocks per stage, the embedding
/// (E) on the first stage and the loss (L) on the last; "t*n" repeats a block n times, "|" separates stages
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py).
std::string pipeline_layout(const std::vector<int>& blocks);

} // namespace hetsim::launch
