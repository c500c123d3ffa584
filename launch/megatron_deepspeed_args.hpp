#pragma once
/// Megatron-DeepSpeed's training arguments for a plan, by the names of its megatron/arguments.py at commit
/// 4efb479d (github.com/deepspeedai/Megatron-DeepSpeed): pretrain_gpt.py builds Megatron's GPT model (GPTModelPipe,
/// a DeepSpeed PipelineModule, with pp > 1) and hands it to DeepSpeed's engine, configured by the ds_config.json
/// deepspeed_engine_config writes.

#include "launch/megatron_args.hpp"

#include <vector>

namespace hetsim::launch {

/// The arguments, `--deepspeed_config` naming `config_path` (a shell word); throws InputError for what
/// Megatron-DeepSpeed cannot run (the field and why).
std::vector<Argument> megatron_deepspeed_arguments(const ExportInputs& inputs, const std::string& config_path);

/// DeepSpeed v0.17.4's partition_balanced (deepspeed/runtime/utils.py:583-621): the boundaries [0, ..., n] that
/// split `weights` into `parts` contiguous parts with the least spread between the heaviest and the lightest,
/// ties going to the last boundary tried, exactly as its dynamic programme breaks them.
std::vector<int> partition_balanced(const std::vector<double>& weights, int parts);

/// Transformer blocks per stage of GPTModelPipe (megatron/model/gpt_model.py:322-463 at 4efb479d) over `stages`,
/// as its partition_method 'type:transformer' places them: the layer specs are the cast to 16-bit, the embedding,
/// the blocks, the final norm, the head and, in fp16 or bf16, the cast back; only the blocks
/// (ParallelTransformerLayerPipe) weigh (PipelineModule._partition_layers, deepspeed/runtime/pipe/module.py:409-414).
std::vector<int> gpt_model_pipe_blocks(int blocks, int stages, bool sixteen_bit);

} // namespace hetsim::launch
