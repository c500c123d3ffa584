#include "launch/plan_export.hpp"

#include "core/error.hpp"
#include "launch/deepspeed_config.hpp"
#include "launch/fsdp_launch.hpp"
#include "launch/launch_scripts.hpp"
#include "launch/megatron_args.hpp"
#include "launch/megatron_deepspeed_args.hpp"
#include "launch/rank_map.hpp"

#include <algorithm>
#include <cctype>

namespace hetsim::launch {
namespace {

using strategies::Plan;

template <typename T> bool all_equal(const std::vector<T>& values)
{
  return std::all_of(values.begin(), values.end(), [&](const T& v) { return v == values.front(); });
}

/// A value as one shell word: as it is when it holds no character the shell treats specially ("E|t*8" does).
std::string shell_word(const std::string& value)
{
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ',';
  });
  return plain ? value : "'" + value + "'"; // values are ours: digits, names, layouts; never a quote
}

/// `file`, a bash array MEGATRON_ARGS of `args` for `who`'s pretrain_gpt.py, after `preamble` (shell lines).
ExportFile arguments_script(const ExportInputs& inputs, const std::string& file, const std::string& who,
                            const std::vector<Argument>& args, const std::string& preamble)
{
  std::string text = "# hetsim export: " + who + " arguments for " + quote(inputs.workload->name) + " on " +
                     quote(inputs.cluster->name()) + ", plan " + quote(inputs.plan_origin) + ".\n# Use: source " +
                     file + "; then pass \"${MEGATRON_ARGS[@]}\" to pretrain_gpt.py with your data and tokenizer\n"
                     "# arguments, launched by this export's torchrun or slurm scripts so that each rank runs on its "
                     "planned GPU.\n" + preamble;
  text += "# shellcheck disable=SC2034  # sourced: the caller passes \"${MEGATRON_ARGS[@]}\"\n";
  text += "MEGATRON_ARGS=(\n";
  for (const Argument& a : args)
    text += "  " + a.flag + (a.value.empty() ? "" : " " + (a.shell_expanded ? a.value : shell_word(a.value))) + "\n";
  return {file, text + ")\n", false};
}

ExportFile megatron_file(const ExportInputs& inputs)
{
  const std::vector<Argument> args = megatron_arguments(inputs);
  // Megatron-LM overlaps tensor- and context-parallel communication with compute only when the GPU runs one
  // connection (validate_args asserts it for tp > 1 or cp > 1 before Blackwell); Megatron FSDP needs more.
  const bool one_connection = (inputs.plan->tp > 1 || inputs.plan->cp > 1) && inputs.plan->zero_stage < 3;
  return arguments_script(inputs, "megatron_args.sh", "Megatron-LM (Megatron-Core 0.13)", args,
                          one_connection ? "export CUDA_DEVICE_MAX_CONNECTIONS=1\n" : "");
}

/// megatron_deepspeed_args.sh naming the ds_config.json beside it, and that config.
std::vector<ExportFile> megatron_deepspeed_files(const ExportInputs& inputs)
{
  const std::vector<Argument> args =
      megatron_deepspeed_arguments(inputs, "\"${HETSIM_EXPORT_DIR}/ds_config.json\"");
  nlohmann::json config = deepspeed_engine_config(inputs);
  // Sequence-parallel shards go whole between stages (megatron_deepspeed_args.cpp): DeepSpeed's pipe_partitioned off.
  if (inputs.plan->pp > 1 && inputs.plan->tp > 1 && !inputs.plan->framework.partitioned_sends)
    config["pipeline"] = {{"pipe_partitioned", false}, {"grad_partitioned", false}};
  std::string preamble = "HETSIM_EXPORT_DIR=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n";
  // Megatron-DeepSpeed's validate_args raises without it under sequence parallelism (megatron/arguments.py:406).
  if (inputs.plan->splits_sequence())
    preamble += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  return {arguments_script(inputs, "megatron_deepspeed_args.sh", "Megatron-DeepSpeed (commit 4efb479d)", args,
                           preamble),
          {"ds_config.json", config.dump(1) + "\n", false}};
}

} // namespace

bool parse_export_format(std::string_view name, ExportFormat& out)
{
  static const std::pair<std::string_view, ExportFormat> formats[] = {
      {"megatron", ExportFormat::megatron},
      {"deepspeed", ExportFormat::deepspeed},
      {"torchrun", ExportFormat::torchrun},
      {"slurm", ExportFormat::slurm},
      {"megatron-deepspeed", ExportFormat::megatron_deepspeed}};
  for (const auto& [format_name, format] : formats)
    if (name == format_name) {
      out = format;
      return true;
    }
  return false;
}

void refuse_plan_field(const ExportInputs& inputs, const std::string& field, const std::string& why)
{
  throw InputError(inputs.plan_origin + ": " + field + ": " + why);
}

void require_runnable_under(const ExportInputs& inputs, strategies::Framework framework, std::string_view who_name)
{
  const Plan& plan = *inputs.plan;
  const std::string who(who_name);
  if (!all_equal(plan.micro_batch))
    refuse_plan_field(inputs, "micro_batch",
                      "replicas run different micro-batches (per-device batches, as Poplar and Whale plan them); " +
                          who +
                          " runs one micro-batch size on every replica; such a plan runs under `hetsim run` only");
  if (!all_equal(plan.grad_accum))
    refuse_plan_field(inputs, "grad_accum",
                      "replicas accumulate different numbers of micro-batches; " + who +
                          " accumulates the same number on every replica");
  if (!plan.last_micro_batch.empty() && std::any_of(plan.last_micro_batch.begin(), plan.last_micro_batch.end(),
                                                    [&](int last) { return last != plan.micro_batch[0]; }))
    refuse_plan_field(inputs, "last_micro_batch",
                      "a shorter last micro-batch (Poplar) is not a " + who +
                          " setting; such a plan runs under `hetsim run` only");
  if (plan.shards_layers())
    refuse_plan_field(inputs, "layer_sharding",
                      "per-layer sharding (OSDP) is not what the export writes for " + who +
                          ": one ZeRO/FSDP stage for the whole model; set zero_stage instead and simulate again");
  if (plan.framework.fp8 != models::Fp8Recipe::none && framework != strategies::Framework::megatron)
    refuse_plan_field(inputs, "dtype",
                      "fp8: its products are priced as Transformer Engine's fp8 linear layers under Megatron-LM "
                      "(--fp8-format, --fp8-recipe); the " + who + " export does not write fp8 training");
  if (plan.framework.name != framework) {
    const std::string wanted(strategies::framework_name(framework));
    refuse_plan_field(inputs, "framework",
                      std::string(strategies::framework_name(plan.framework.name)) +
                          ": the plan was simulated as that framework moves bytes, not as " + who +
                          " does; simulate it with \"framework\": \"" + wanted + "\" (search --framework " + wanted +
                          ") to export it for " + who);
  }
}

bool has_single_bucket_chunk(const strategies::Plan& plan)
{
  for (int chunk = 0; chunk < plan.chunk_count(); ++chunk)
    if (!plan.buckets_chunk(chunk))
      return true;
  return false;
}

std::vector<int> blocks_per_stage(const ExportInputs& inputs, std::string_view framework)
{
  const Plan& plan      = *inputs.plan;
  const auto& layers    = inputs.workload->layers;
  const int layer_count = static_cast<int>(layers.size());
  std::vector<int> blocks(plan.chunk_count(), 0);
  for (int s = 0; s < plan.chunk_count(); ++s) {
    const int first = plan.stage_starts[s], end = plan.stage_end(s, layer_count);
    if (layers[first].kind == "mlp") // a block split into attention and MLP layers, cut between the two
      refuse_plan_field(inputs, "stage_starts[" + std::to_string(s) + "]",
                        "stage " + std::to_string(s) + " starts at " + layers[first].name +
                            ", inside a transformer block; " + std::string(framework) + " places whole blocks");
    for (int l = first; l < end; ++l)
      blocks[s] += layers[l].kind == "transformer" || layers[l].kind == "attention" ? 1 : 0;
  }
  return blocks;
}

std::vector<ExportFile> export_plan(const ExportInputs& inputs, ExportFormat format)
{
  HETSIM_ASSERT(inputs.cluster && inputs.workload && inputs.plan);
  switch (format) {
    case ExportFormat::megatron:
      return {megatron_file(inputs)};
    case ExportFormat::deepspeed: {
      std::vector<ExportFile> files = {{"ds_config.json", deepspeed_config(inputs).dump(1) + "\n", false}};
      if (inputs.plan->pp > 1)
        files.push_back({"pipeline_parts.json", pipeline_parts(inputs).dump(1) + "\n", false});
      return files;
    }
    case ExportFormat::megatron_deepspeed:
      return megatron_deepspeed_files(inputs);
    case ExportFormat::torchrun:
    case ExportFormat::slurm: {
      // A plan simulated as FSDP is launched as an FSDP script: only what FSDP runs. Other plans' launchers run
      // the framework's own command, which its export checked.
      if (inputs.plan->framework.name == strategies::Framework::fsdp)
        check_fsdp_runnable(inputs);
      const RankMap map = make_rank_map(*inputs.cluster, *inputs.plan);
      return format == ExportFormat::torchrun ? torchrun_scripts(inputs, map) : slurm_scripts(inputs, map);
    }
  }
  HETSIM_ASSERT(false);
  return {};
}

} // namespace hetsim::launch
