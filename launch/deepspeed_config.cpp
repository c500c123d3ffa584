#include "launch/deepspeed_config.hpp"

#include "core/error.hpp"
#include "strategies/plan/framework.hpp"

#include <cmath>

namespace hetsim::launch {
namespace {

using strategies::Plan;

void check_runnable(const ExportInputs& inputs)
{
  require_runnable_under(inputs, strategies::Framework::deepspeed, "DeepSpeed");
  const Plan& plan = *inputs.plan;
  if (plan.tp > 1)
    refuse_plan_field(inputs, "tp",
                      std::to_string(plan.tp) + ": DeepSpeed's engine has no tensor parallelism of its own; "
                                                "Megatron-DeepSpeed adds Megatron's (search --framework "
                                                "megatron-deepspeed, export --format megatron-deepspeed)");
  if (plan.selective_recompute)
    refuse_plan_field(inputs, "recompute",
                      "\"selective\": DeepSpeed's activation checkpointing reruns whole layers; set \"recompute\": "
                      "true and simulate again, or export --format megatron");
  check_engine_runnable(inputs);
}

} // namespace

void check_engine_runnable(const ExportInputs& inputs)
{
  const Plan& plan = *inputs.plan;
  if (plan.pp > 1 && plan.zero_stage > 1)
    refuse_plan_field(inputs, "zero_stage",
                      std::to_string(plan.zero_stage) + " with pp " + std::to_string(plan.pp) +
                          ": DeepSpeed's pipeline engine runs ZeRO-1 at most");
  if (plan.pp > 1 && plan.schedule == strategies::PipelineSchedule::zero_bubble)
    refuse_plan_field(inputs, "schedule",
                      "zero_bubble: DeepSpeed's pipeline engine runs 1F1B only; set \"schedule\": \"1f1b\" and "
                      "simulate again");
  if (plan.pp > 1 && plan.schedule == strategies::PipelineSchedule::gpipe)
    refuse_plan_field(inputs, "schedule",
                      "gpipe: DeepSpeed's pipeline engine runs its 1F1B TrainSchedule; set \"schedule\": "
                      "\"1f1b\" and simulate again");
  if (plan.ep > 1)
    refuse_plan_field(inputs, "ep",
                      std::to_string(plan.ep) + ": DeepSpeed sets expert parallelism in the model code "
                                                "(deepspeed.moe.layer.MoE's ep_size), not in its config; export "
                                                "--format megatron");
  if (plan.cp > 1)
    refuse_plan_field(inputs, "cp",
                      std::to_string(plan.cp) + ": DeepSpeed has no ring attention (its Ulysses sequence "
                                                "parallelism is another scheme); export --format megatron");
  if (plan.virtual_stages > 1)
    refuse_plan_field(inputs, "virtual_stages",
                      std::to_string(plan.virtual_stages) +
                          ": DeepSpeed's pipeline engine holds one contiguous part of the model per stage, with no "
                          "interleaved schedule; export --format megatron, or set virtual_stages 1 and simulate "
                          "again");
}

nlohmann::json deepspeed_config(const ExportInputs& inputs)
{
  check_runnable(inputs);
  nlohmann::json config = deepspeed_engine_config(inputs);
  if (inputs.plan->recompute && inputs.plan->pp > 1) // the pipeline engine checkpoints every layer of its stage
    config["pipeline"] = {{"activation_checkpoint_interval", 1}};
  return config;
}

nlohmann::json deepspeed_engine_config(const ExportInputs& inputs)
{
  const Plan& plan                               = *inputs.plan;
  const strategies::FrameworkSettings& framework = plan.framework;
  nlohmann::json config;
  config["train_batch_size"]               = plan.global_batch();
  config["train_micro_batch_size_per_gpu"] = plan.micro_batch[0];
  config["gradient_accumulation_steps"]    = plan.grad_accum[0];
  if (plan.dtype == Dtype::fp16)
    config["fp16"] = {{"enabled", true}, {"loss_scale", 0}}; // 0: dynamic loss scaling
  else if (plan.dtype == Dtype::bf16)
    config["bf16"] = {{"enabled", true}};
  // DeepSpeed picks its BF16_Optimizer by the accumulation dtype, fp32 by default only without ZeRO (engine.py,
  // get_data_types); a ZeRO-1 plan simulated with it says so.
  if (plan.zero_stage == 1 && strategies::uses_bf16_optimizer(framework, plan.dtype, plan.zero_stage))
    config["data_types"] = {{"grad_accum_dtype", "fp32"}};
  config["communication_data_type"] =
      strategies::reduces_in_fp32(framework, plan.dtype) ? "fp32" : std::string(dtype_name(plan.dtype));

  if (has_single_bucket_chunk(plan) && plan.dp > 1 && plan.zero_stage < 3)
    refuse_plan_field(inputs, "framework.buckets_first_chunk_only",
                      "true with pp " + std::to_string(plan.pp) +
                          ": DeepSpeed's engine reduces every stage's gradients in buckets (pipe/engine.py:300, "
                          "engine.py allreduce_gradients); set it false and simulate again");
  nlohmann::json zero   = {{"stage", plan.zero_stage}};
  const double elements = plan.gradient_bucket_bytes() / plan.gradient_reduction_bytes(); // buckets count elements
  if (plan.zero_stage == 0) {
    // Without ZeRO the engine reduces after the backward pass, in buckets of MEMORY_OPT_ALLREDUCE_SIZE (5e8
    // elements; runtime/engine.py, allreduce_gradients), and reads neither overlap_comm nor reduce_bucket_size:
    // a plan simulated otherwise is not what DeepSpeed would run.
    constexpr long long kEngineBucket = 500'000'000;
    if (framework.reduce_during_backward)
      refuse_plan_field(inputs, "framework.reduce_during_backward",
                        "true with zero_stage 0: DeepSpeed's engine reduces the gradients after the backward pass "
                        "whatever its config says; set it false, or a ZeRO stage");
    if (plan.dp > 1 && std::llround(elements) != kEngineBucket)
      refuse_plan_field(inputs, "framework.bucket_params",
                        std::to_string(std::llround(elements)) + " elements with zero_stage 0: DeepSpeed's engine "
                        "reduces in buckets of " + std::to_string(kEngineBucket) + " whatever its config says");
  } else {
    zero["reduce_bucket_size"] = std::llround(elements);
    // ZeRO-3 reduce-scatters each layer as its backward ends, as simulated and as DeepSpeed's default
    // (zero/config.py, overlap_comm_valid: true for stage 3) does; ZeRO-1/2 as the plan says.
    zero["overlap_comm"]         = plan.zero_stage == 3 || framework.reduce_during_backward;
    zero["contiguous_gradients"] = true;
  }
  if (plan.zero_stage >= 1 && plan.zero_stage <= 2)
    zero["allgather_bucket_size"] = std::llround(elements);
  if (plan.zero_stage == 3 && framework.prefetch_params > 0)
    zero["stage3_prefetch_bucket_size"] = std::llround(framework.prefetch_params);
  if (plan.zero_stage == 3) // the tensors left whole on every rank, as simulated
    zero["stage3_param_persistence_threshold"] = std::llround(framework.persistence_threshold);
  if (plan.zero_stage == 3 && framework.max_reuse_distance) // when a recomputed tensor is gathered again
    zero["stage3_max_reuse_distance"] = std::llround(*framework.max_reuse_distance);
  config["zero_optimization"] = zero;

  if (plan.recompute) // every block recomputed from its input; checkpoints kept whole on their GPU
    config["activation_checkpointing"] = {
        {"partition_activations", false}, {"contiguous_memory_optimization", false}, {"cpu_checkpointing", false}};
  return config;
}

nlohmann::json pipeline_parts(const ExportInputs& inputs)
{
  check_runnable(inputs);
  const Plan& plan      = *inputs.plan;
  const int layer_count = static_cast<int>(inputs.workload->layers.size());
  blocks_per_stage(inputs, "DeepSpeed"); // refuses a boundary inside a block
  nlohmann::json parts = nlohmann::json::array();
  for (int s = 0; s < plan.pp; ++s)
    parts.push_back(plan.stage_starts[s]);
  parts.push_back(layer_count);
  nlohmann::json layers = nlohmann::json::array();
  for (const models::Layer& layer : inputs.workload->layers)
    layers.push_back(layer.name);
  nlohmann::json result = {{"num_stages", plan.pp}, {"parts", parts}, {"layers", layers}};
  if (plan.recompute) // PipelineModule's own argument; the config's "pipeline" section sets it too
    result["activation_checkpoint_interval"] = 1;
  return result;
}

} // namespace hetsim::launch
