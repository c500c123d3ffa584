#pragma once
/// `hetsim export`: a plan as the files a framework launches it with. Each format says what the plan decided in
/// that framework's own terms, or refuses, naming the plan field it cannot express and why; it never writes a
/// silently different plan.
///
///   megatron   megatron_args.sh: Megatron-LM (Megatron-Core 0.13) arguments as a bash array
///   deepspeed  ds_config.json, and pipeline_parts.json with the stage boundaries when pp > 1
///   megatron-deepspeed  megatron_deepspeed_args.sh (Megatron-DeepSpeed, commit 4efb479d) and ds_config.json
///   torchrun   one launch_node<k>.sh per node, hostfile and rank_map.json (virtual rank -> host and GPU)
///   slurm      job.sbatch running one task per rank with srun's arbitrary distribution, hostfile, rank_map.json

#include "core/cluster.hpp"
#include "models/workload.hpp"
#include "strategies/plan/plan.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace hetsim::launch {

enum class ExportFormat { megatron, deepspeed, torchrun, slurm, megatron_deepspeed };

/// "megatron|deepspeed|torchrun|slurm|megatron-deepspeed" parsing; false for anything else.
bool parse_export_format(std::string_view name, ExportFormat& out);

struct ExportInputs {
  const Cluster* cluster           = nullptr;
  const models::Workload* workload = nullptr;
  const strategies::Plan* plan     = nullptr;
  std::string plan_origin;    ///< the plan file, for messages: "best.json"
  std::string model_origin;   ///< the model file, for messages
  std::string cluster_origin; ///< the cluster file, for messages
};

struct ExportFile {
  std::string name; ///< relative to the output directory
  std::string content;
  bool executable = false;
};

/// The files of `format` for the plan. Throws InputError ("best.json: micro_batch: ...") for a plan the format
/// cannot run.
std::vector<ExportFile> export_plan(const ExportInputs& inputs, ExportFormat format);

/// Throws InputError "best.json: FIELD: WHY", naming the plan field a format cannot express.
[[noreturn]] void refuse_plan_field(const ExportInputs& inputs, const std::string& field, const std::string& why);

/// What a framework's export needs of any plan: one batch shape on every replica (not Poplar's or Whale's
/// per-replica micro-batches, nor a short last one), no per-layer sharding (OSDP), and the plan simulated under
/// that framework's behaviour (`framework`). Throws InputError naming the field; `who` names the framework.
void require_runnable_under(const ExportInputs& inputs, strategies::Framework framework, std::string_view who);

/// Whether some chunk of `plan` reduces its gradients in one bucket (Plan::buckets_chunk), which only Megatron-LM
/// does.
bool has_single_bucket_chunk(const strategies::Plan& plan);

/// Transformer blocks on each stage, or each model chunk with virtual stages (the embedding and the head are not
/// blocks). Throws InputError when a boundary falls inside a block split into attention and MLP layers.
std::vector<int> blocks_per_stage(const ExportInputs& inputs, std::string_view framework);

} // namespace hetsim::launch
