#pragma once
/// Plan files: reading with full validation against the cluster and the model, and writing.
///
/// Fields: tp, pp, dp (default 1; their product must be the cluster's device count); placement (device id per
/// virtual rank (stage * dp + replica) * tp + tp_rank, each device once; default identity); stage_starts (first
/// layer of each stage, starting at 0 and increasing; default: layers split evenly); micro_batch (required:
/// a number, or one per replica for heterogeneous batches); grad_accum (number or one per replica, default 1);
/// micro_batch_per_device / grad_accum_per_device instead (by device id; a replica's devices agree); or global_batch to derive it (a multiple of the micro-batches summed over replicas); zero_stage 0-3 (2 and 3
/// need the same grad_accum on every replica); schedule "gpipe"|"1f1b"|"zero_bubble" (default 1f1b); recompute (default
/// false); dtype "fp16"|"bf16"|"fp32" (default: the model's, else fp16); collective_algorithm "ring"|"tree"|"hierarchical"|"nccl"
/// (default ring); bucket_mib (gradient bucket, default 25, at least 1/16); last_micro_batch or
/// last_micro_batch_per_device (Poplar: sequences in each replica's last micro-batch, at most its micro_batch,
/// with pp 1 and grad_accum); layer_sharding (OSDP, with zero_stage 0: per layer 0, 1 or
/// {"sharded": j, "slices": k}, k in 1/2/4/8); virtual_stages and microbatch_group; ep; sequence_parallel; cp (context parallelism:
/// tp * cp * pp * dp devices, ranks in Megatron's tp-cp-dp-pp order, the per-replica fields still one per
/// replica); description (ignored).
/// Unknown fields are errors.

#include "core/cluster.hpp"
#include "core/error.hpp" // InputError
#include "models/workload.hpp"
#include "strategies/plan/plan.hpp"

#include <nlohmann/json.hpp>

namespace hetsim::strategies {

/// Loads `preset:NAME` or a file and validates it; every error names the file, the JSON path and what was expected.
Plan load_plan(const std::string& file_or_preset, const Cluster& cluster, const models::Workload& workload);
Plan plan_from_json(const nlohmann::json& json, const std::string& origin, const Cluster& cluster,
                    const models::Workload& workload);
nlohmann::json plan_to_json(const Plan& plan);

/// The sequence length to load the model at for the plan `file_or_preset`: the plan's `seq_len` when it has
/// one (an InputError when `given`, the user's --seq-len, says otherwise), else `given` (0: the model's).
int seq_len_for_plan(const std::string& file_or_preset, int given, const std::string& option = "--seq-len");

/// Checks a plan built in code (by a planner) the same way; throws InputError prefixed with `origin`.
void validate_plan(const Plan& plan, const Cluster& cluster, const models::Workload& workload,
                   const std::string& origin);

/// The largest tensor-parallel degree validate_plan accepts for `workload`, every divisor of it too: Megatron-LM
/// gives each rank whole attention heads and key-value groups, an equal share of the MLP columns
/// (TransformerShape::tensor_parallel_limit) and, when tp splits the sequence (sequence parallelism), an equal
/// slice of it. 0 for a layer list, which every degree splits.
int tensor_parallel_limit(const models::Workload& workload, bool splits_sequence);

/// Stage boundaries that give every stage the same number of layers (the first ones get one more).
std::vector<int> uniform_stage_starts(int layer_count, int pp);

} // namespace hetsim::strategies
