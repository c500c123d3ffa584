#pragma once
/// What a torchrun or Slurm launch of a PyTorch FSDP training script can run of a plan simulated as FSDP
/// (framework "fsdp"): data parallelism sharded as one of FSDP's strategies, one micro-batch size on every rank.

#include "launch/plan_export.hpp"

namespace hetsim::launch {

/// Throws InputError naming the plan field ("best.json: tp: 2: ...") when FSDP cannot run the plan: tensor,
/// pipeline (and so virtual stages), context or expert parallelism, ZeRO-1 (FSDP's ShardingStrategy has NO_SHARD,
/// SHARD_GRAD_OP and FULL_SHARD: ZeRO stages 0, 2 and 3), and what require_runnable_under refuses.
void check_fsdp_runnable(const ExportInputs& inputs);

} // namespace hetsim::launch
