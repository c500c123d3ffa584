#pragma once
/// DeepSpeed's configuration for a plan, by the keys of DeepSpeed's config-json documentation: batch sizes and
/// accumulation, precision, the ZeRO stage with its buckets and prefetch, the gradient reduction dtype, and
/// activation checkpointing. A pipeline's stages are not a config key: DeepSpeed's PipelineModule takes them
/// (pipeline_parts).

#include "launch/plan_export.hpp"

#include <nlohmann/json.hpp>

namespace hetsim::launch {

/// The ds_config.json; throws InputError for what DeepSpeed cannot run (the field and why).
nlohmann::json deepspeed_config(const ExportInputs& inputs);

/// What DeepSpeed's engine runs for the plan, the one home of the configuration both `deepspeed_config` and
/// Megatron-DeepSpeed's export write: batch, precision, reduction dtype, ZeRO and its buckets, activation
/// checkpointing. Throws InputError where the plan's gradient reduction is not what the engine does at ZeRO-0.
nlohmann::json deepspeed_engine_config(const ExportInputs& inputs);

/// Throws InputError for what DeepSpeed's engine and pipeline engine cannot run, under DeepSpeed and
/// Megatron-DeepSpeed alike: ZeRO-2/3 with pp > 1, schedules other than 1F1B, virtual stages, context and expert
/// parallelism.
void check_engine_runnable(const ExportInputs& inputs);

/// The stage boundaries for PipelineModule as indices into the layer list (embedding, the blocks, the head):
/// {"num_stages": pp, "parts": [0, b1, ..., layer count], "layers": [names]}, stage s holding layers parts[s]
/// to parts[s + 1] - 1. PipelineModule's partition_method takes no explicit boundaries (only "uniform",
/// "parameters", "type:REGEX"): a subclass sets its `parts` from this file (docs/exporting.md).
nlohmann::json pipeline_parts(const ExportInputs& inputs);

} // namespace hetsim::launch
