#include "launch/fsdp_launch.hpp"

namespace hetsim::launch {
namespace {

void refuse_degree(const ExportInputs& inputs, const char* field, int degree, const std::string& why)
{
  if (degree > 1)
    refuse_plan_field(inputs, field, std::to_string(degree) + ": " + why);
}

} // namespace

void check_fsdp_runnable(const ExportInputs& inputs)
{
  require_runnable_under(inputs, strategies::Framework::fsdp, "PyTorch FSDP");
  const strategies::Plan& plan = *inputs.plan;
  const std::string rewrite = " needs the model rewritten for it (torch.distributed.tensor.parallel, "
                              "torch.distributed.pipelining), which an FSDP training script does not do; search "
                              "with --planner zero3 or deepspeed for the sharded data parallelism FSDP runs, or "
                              "with --framework megatron and export --format megatron to run this plan";
  refuse_degree(inputs, "tp", plan.tp, "FSDP shards data-parallel ranks only; tensor parallelism" + rewrite);
  refuse_degree(inputs, "pp", plan.pp, "FSDP runs no pipeline; pipeline parallelism" + rewrite);
  refuse_degree(inputs, "cp", plan.cp, "FSDP has no ring attention; context parallelism" + rewrite);
  refuse_degree(inputs, "ep", plan.ep, "FSDP places no experts; expert parallelism" + rewrite);
  // Virtual stages come with pp > 1 only (plan validation), refused above.
  // torch/distributed/fsdp/api.py, ShardingStrategy: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD (and the hybrid ones
  // over nodes): nothing shards the optimizer states alone.
  if (plan.zero_stage == 1)
    refuse_plan_field(inputs, "zero_stage",
                      "1: FSDP's sharding strategies are NO_SHARD, SHARD_GRAD_OP and FULL_SHARD (ZeRO 0, 2 and 3); "
                      "none shards the optimizer states alone; set zero_stage 2 and simulate again");
}

} // namespace hetsim::launch
