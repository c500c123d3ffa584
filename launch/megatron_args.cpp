#include "launch/megatron_args.hpp"

#include "core/error.hpp"
#include "models/transformer.hpp"
#include "strategies/plan/framework.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hetsim::launch {
namespace {

using strategies::Plan;

void add(std::vector<Argument>& args, std::string flag, long long value)
{
  args.push_back({std::move(flag), std::to_string(value)});
}

/// Megatron-Core's MoE layer as the simulation runs it: grouped expert products behind the all-to-all token
/// dispatcher, sparse blocks where the Hugging Face config puts them. Refused where core_v0.13.0 cannot run
/// that: grouped GEMMs in anything but bf16 (validate_args: "Currently GroupedGEMM for MoE only supports bf16
/// dtype"), and Qwen2-MoE's shared-expert gate, for which it has no flag (TransformerConfig's
/// moe_shared_expert_gate came with core_v0.16).
void add_experts(std::vector<Argument>& args, const models::TransformerShape& shape, const ExportInputs& inputs)
{
  if (inputs.plan->dtype != Dtype::bf16)
    refuse_plan_field(inputs, "dtype",
                      std::string(dtype_name(inputs.plan->dtype)) + " on a mixture of experts: Megatron-LM core_v0.13.0 "
                      "runs grouped expert GEMMs (--moe-grouped-gemm, as simulated) in bf16 only; search with "
                      "--dtype bf16");
  if (shape.shared_expert_gate)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s shared-expert gate has no Megatron-LM core_v0.13.0 flag "
                       "(--moe-shared-expert-gate came with core_v0.16), so the launched model would lack it");
  add(args, "--num-experts", shape.experts);
  add(args, "--moe-router-topk", shape.experts_per_token);
  add(args, "--moe-ffn-hidden-size", shape.expert_intermediate);
  if (shape.shared_expert_intermediate > 0)
    add(args, "--moe-shared-expert-intermediate-size", shape.shared_expert_intermediate);
  std::string pattern = "[";
  for (int i = 0; i < shape.layers; ++i)
    pattern += std::string(i > 0 ? "," : "") + (shape.sparse_block(i) ? "1" : "0");
  args.push_back({"--moe-layer-freq", pattern + "]"});
  args.push_back({"--moe-token-dispatcher-type", "alltoall"});
  args.push_back({"--moe-grouped-gemm", ""});
  // The router as the config's: Megatron-Core's topk_softmax_with_capacity (moe_utils.py) takes the top-k of the
  // logits then their softmax by default (Mixtral's renormalised weights), a softmax over all experts first with
  // --moe-router-pre-softmax, and sigmoid scores normalised over the top-k (DeepSeek-V3, whose expert bias
  // validate_args allows with sigmoid only).
  if (shape.sigmoid_router)
    args.push_back({"--moe-router-score-function", "sigmoid"});
  if (shape.router_pre_softmax)
    args.push_back({"--moe-router-pre-softmax", ""});
  if (shape.router_groups > 0) {
    add(args, "--moe-router-num-groups", shape.router_groups);
    add(args, "--moe-router-group-topk", shape.router_group_topk);
  }
  if (shape.router_topk_scale > 0)
    args.push_back({"--moe-router-topk-scaling-factor", format_arg(shape.router_topk_scale)});
  if (shape.router_bias) // DeepSeek-V3's per-expert score bias
    args.push_back({"--moe-router-enable-expert-bias", ""});
  if (shape.capacity_factor > 1) { // every expert padded to the busiest one's share, as simulated
    args.push_back({"--moe-expert-capacity-factor", std::to_string(shape.capacity_factor)});
    args.push_back({"--moe-pad-expert-input-to-capacity", ""});
  }
}

/// Rotary positions as the config gives them (megatron/training/arguments.py at core_v0.13.0: --rotary-base is
/// an int, default 10,000; --rotary-percent 1.0; --use-rope-scaling with --rope-scaling-factor for Llama 3's
/// scaling; an int --rotary-seq-len-interpolation-factor for linear scaling; --rotary-scaling-factor, --mscale
/// and --mscale-all-dim for YaRN in multi-latent attention).
void add_rotary(std::vector<Argument>& args, const models::TransformerShape& shape, const std::string& origin)
{
  args.push_back({"--position-embedding-type", "rope"});
  if (shape.rope_base != std::round(shape.rope_base) || shape.rope_base > 2e9)
    throw InputError(origin + ": rope_theta: expected a whole number for Megatron-LM's --rotary-base (an int), got " +
                     format_arg(shape.rope_base));
  if (shape.rope_base != 10000)
    add(args, "--rotary-base", std::llround(shape.rope_base));
  if (shape.rotary_percent != 1)
    args.push_back({"--rotary-percent", format_arg(shape.rotary_percent)});
  const std::string& scaling = shape.rope_scaling;
  if (scaling.empty())
    return;
  if (scaling == "llama3") {
    args.push_back({"--use-rope-scaling", ""});
    args.push_back({"--rope-scaling-factor", format_arg(shape.rope_scaling_factor)});
  } else if (scaling == "linear" && shape.rope_scaling_factor == std::round(shape.rope_scaling_factor)) {
    add(args, "--rotary-seq-len-interpolation-factor", std::llround(shape.rope_scaling_factor));
  } else if (scaling == "yarn" && shape.latent_attention()) {
    args.push_back({"--rotary-scaling-factor", format_arg(shape.rope_scaling_factor)});
    args.push_back({"--mscale", format_arg(shape.rope_mscale)});
    args.push_back({"--mscale-all-dim", format_arg(shape.rope_mscale_all_dim)});
  } else {
    throw InputError(origin + ": rope_scaling: expected \"llama3\", a whole-number \"linear\" factor, or "
                     "\"yarn\" with multi-latent attention, the context extensions Megatron-LM's arguments "
                     "take; got \"" + scaling + "\" (factor " + format_arg(shape.rope_scaling_factor) + ")");
  }
}

void add_model(std::vector<Argument>& args, const ExportInputs& inputs)
{
  // Its default --transformer-impl transformer_engine with --attention-backend auto: Transformer Engine's choice.
  const models::TransformerShape& shape =
      megatron_gpt_shape(inputs, "Megatron-LM core_v0.13.0", models::AttentionKernel::te_fused);
  add_gpt_dimensions(args, shape);
  if (shape.qkv_bias && !shape.biases) // Qwen2: biases on the query, key and value projections only
    args.push_back({"--add-qkv-bias", ""});
  if (shape.qk_norm_whole_width)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s query and key norms span all heads, where Megatron-LM's "
                                           "--qk-layernorm normalises each head");
  if (shape.qk_norm) // Qwen3: Megatron-Core's q_layernorm and k_layernorm over each head (the block's norm kind)
    args.push_back({"--qk-layernorm", ""});
  if (shape.kv_heads != shape.heads) {
    args.push_back({"--group-query-attention", ""});
    add(args, "--num-query-groups", shape.kv_heads);
  }
  add(args, "--seq-length", shape.seq_len);
  add(args, "--max-position-embeddings", std::max(shape.max_positions, shape.seq_len));
  if (shape.max_positions == 0)
    add_rotary(args, shape, inputs.model_origin);
  add_gpt_block_flags(args, shape, "RMSNorm");
  if (shape.latent_attention()) { // DeepSeek's multi-head latent attention
    args.push_back({"--multi-latent-attention", ""});
    if (shape.q_lora_rank > 0)
      add(args, "--q-lora-rank", shape.q_lora_rank);
    add(args, "--kv-lora-rank", shape.kv_lora_rank);
    add(args, "--qk-head-dim", shape.qk_nope_head_dim);
    add(args, "--qk-pos-emb-head-dim", shape.qk_rope_head_dim);
    add(args, "--v-head-dim", shape.v_head_dim);
  }
  if (shape.mixture_of_experts())
    add_experts(args, shape, inputs);
  // The vocabulary comes from the user's tokenizer (--tokenizer-type and its files); Megatron pads it to a
  // multiple of 128 x tp, as the simulated model did not: a difference of under 0.1% of the parameters.
}

void add_precision(std::vector<Argument>& args, const Plan& plan)
{
  if (plan.dtype == Dtype::bf16)
    args.push_back({"--bf16", ""});
  else if (plan.dtype == Dtype::fp16)
    args.push_back({"--fp16", ""});
  // fp16 training reduces fp16 gradients unless the plan's framework reduces in fp32; with bf16 Megatron-LM
  // accumulates and reduces in fp32 by itself.
  if (plan.dtype == Dtype::fp16 && strategies::reduces_in_fp32(plan.framework, plan.dtype))
    args.push_back({"--accumulate-allreduce-grads-in-fp32", ""});
  if (plan.dtype == Dtype::bf16 && !strategies::reduces_in_fp32(plan.framework, plan.dtype))
    args.push_back({"--grad-reduce-in-bf16", ""});
  // fp8 as priced (models/fp8.hpp): Transformer Engine's linear layers, E4M3 forward and E5M2 gradients; MXFP8
  // in E4M3 throughout, as NVIDIA's recipes run it (Megatron-Bridge bf16_with_mxfp8_mixed, training/
  // mixed_precision.py:262 at 067f987: its per-32 scales keep E5M2's range unneeded).
  const models::Fp8Recipe fp8 = plan.framework.fp8;
  if (fp8 != models::Fp8Recipe::none) {
    args.push_back({"--fp8-format", fp8 == models::Fp8Recipe::mxfp8 ? "e4m3" : "hybrid"});
    args.push_back({"--fp8-recipe", std::string(models::fp8_recipe_name(fp8))});
  }
  // Weights kept in fp8 alone. MXFP8 gathers them through the gradient buffer, as Megatron-Core recommends
  // ("Setting --reuse-grad-buf-for-mxfp8-param-ag and --fp8-param-gather is recommended for mxfp8 training",
  // optimizer/optimizer_config.py:416-424 at d98e8a6) and Megatron-Bridge's MXFP8 recipes set.
  if (plan.framework.fp8_param_gather) {
    args.push_back({"--fp8-param-gather", ""});
    if (fp8 == models::Fp8Recipe::mxfp8)
      args.push_back({"--reuse-grad-buf-for-mxfp8-param-ag", ""});
  }
}

void add_data_parallel(std::vector<Argument>& args, const ExportInputs& inputs)
{
  const Plan& plan = *inputs.plan;
  switch (plan.zero_stage) {
    case 0:
      break;
    case 1:
      args.push_back({"--use-distributed-optimizer", ""});
      break;
    case 2:
      refuse_plan_field(
          inputs, "zero_stage",
          "2: Megatron-LM's distributed optimizer shards the optimizer states (ZeRO-1) but keeps whole gradient "
          "buffers; export --format deepspeed runs ZeRO-2, or set zero_stage 1 and simulate again");
    default:
      // Megatron-Core's own fully sharded data parallel: optimizer states, gradients and parameters.
      args.push_back({"--use-custom-fsdp", ""});
      args.push_back({"--data-parallel-sharding-strategy", "optim_grads_params"});
      args.push_back({"--use-distributed-optimizer", ""});
      args.push_back({"--no-gradient-accumulation-fusion", ""}); // Megatron FSDP requires it
      break;
  }
  if (plan.dp > 1 && plan.zero_stage < 3) {
    // Bucketed on pipeline rank 0's first chunk only (distributed_data_parallel.py l.186, training.py l.1139),
    // and nowhere without --overlap-grad-reduce (training.py l.1129).
    Plan as_megatron                               = plan;
    as_megatron.framework.buckets_first_chunk_only = true;
    if (!plan.framework.buckets_first_chunk_only && has_single_bucket_chunk(as_megatron))
      refuse_plan_field(inputs, "framework.buckets_first_chunk_only",
                        "false: Megatron-LM reduces in buckets only on pipeline rank 0's first chunk, and only with "
                        "--overlap-grad-reduce (every other chunk in one bucket); leave the setting at its default "
                        "and simulate again");
    const double bucket_params = plan.gradient_bucket_bytes() / plan.gradient_reduction_bytes();
    add(args, "--ddp-bucket-size", std::llround(bucket_params));
    if (plan.framework.reduce_during_backward)
      args.push_back({"--overlap-grad-reduce", ""});
  }
}

} // namespace

std::string format_arg(double value)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

void refuse_model_field(const ExportInputs& inputs, const std::string& field, const std::string& why)
{
  throw InputError(inputs.model_origin + ": " + field + ": " + why + "; export --format deepspeed or torchrun");
}

const models::TransformerShape& megatron_gpt_shape(const ExportInputs& inputs, const std::string& who,
                                                   models::AttentionKernel attention)
{
  if (!inputs.workload->shape)
    throw InputError(inputs.model_origin + ": a layer list has no transformer shape for " + who +
                     "'s model arguments (--hidden-size, --num-layers, ...); give its Hugging Face config.json");
  const models::TransformerShape& shape = *inputs.workload->shape;
  // Plan validation has checked that tp splits the heads and MLP as Megatron-LM does.
  if (!shape.fused_gelu)
    refuse_model_field(inputs, "fused_gelu",
                       "expected true for " + who + ", which runs its fused bias-GeLU (the plan was costed with "
                       "eager PyTorch's op-by-op GeLU)");
  if (shape.family == "bert")
    refuse_model_field(inputs, "model_type",
                       "bert trains with " + who + "'s pretrain_bert.py, whose model arguments this export does not "
                       "write");
  if (shape.gated_mlp && shape.gelu_gate)
    refuse_model_field(inputs, "hidden_activation",
                       "a GeLU-gated MLP (GeGLU) has no " + who + " flag (--swiglu gates with SiLU, which would "
                       "train another model)");
  if (shape.relu_mlp)
    refuse_model_field(inputs, "activation_function",
                       "relu has no " + who + " flag (its MLPs use GeLU, --swiglu or --squared-relu), so the "
                       "launched model would differ");
  if (shape.parallel_residual)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s attention and MLP run in parallel on one residual, which " + who +
                           "'s GPT blocks have no option for");
  if (shape.flash_attention && shape.attention != models::AttentionKernel::framework_default &&
      shape.attention != attention)
    refuse_model_field(inputs, "attention",
                       std::string(models::attention_kernel_name(shape.attention)) + " was simulated, where " + who +
                           " as exported runs " + std::string(models::attention_kernel_name(attention)));
  if (shape.loss != models::LossKernel::framework_default && shape.loss != models::LossKernel::megatron)
    refuse_model_field(inputs, "loss",
                       std::string(models::loss_kernel_name(shape.loss)) + " was simulated, where " + who +
                           " as exported runs its vocabulary-parallel fp32 cross entropy");
  if (shape.alibi)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s ALiBi positions have no " + who +
                           " flag (its GPT blocks take learned absolute or rotary positions)");
  if (shape.attention_sinks)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s attention sinks have no " + who + " flag");
  if (!shape.biases && (shape.attention_output_bias || shape.mlp_bias))
    refuse_model_field(inputs, shape.attention_output_bias ? "attention_bias" : "mlp_bias",
                       shape.type_name() + "'s biases on " +
                           (shape.attention_output_bias ? "the attention's projections" : "the MLP's projections") +
                           " alone have no " + who + " flag (--disable-bias-linear drops every bias, "
                           "--add-qkv-bias adds the query, key and value ones)");
  if (shape.logits_bias)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s bias on the output projection has no " + who + " flag");
  if (shape.embedding_norm)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s norm on the embeddings has no " + who + " flag");
  if (shape.position_offset > 0)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s learned positions start " + std::to_string(shape.position_offset) +
                           " rows in, which " + who + "'s learned absolute embedding has no option for");
  return shape;
}

void add_selective_recompute(std::vector<Argument>& args, const ExportInputs& inputs, const std::string& who)
{
  const Plan& plan = *inputs.plan;
  if (!plan.selective_recompute)
    return;
  if (plan.framework.selective != models::SelectivePolicy::core_attention)
    refuse_plan_field(inputs, "framework.selective",
                      "\"op\": " + who + " reruns only its core attention under selective recompute, not "
                      "torchtitan's op-level policy; set \"selective\": \"core_attn\" and simulate again");
  args.push_back({"--recompute-granularity", "selective"});
}

void add_gpt_dimensions(std::vector<Argument>& args, const models::TransformerShape& shape)
{
  // Megatron-LM's and Megatron-DeepSpeed's dropouts default to 0.1 (arguments.py); a family trained without
  // dropout, as priced (no masks kept), says 0.
  if (!models::trains_with_dropout(shape)) {
    add(args, "--hidden-dropout", 0);
    add(args, "--attention-dropout", 0);
  }
  add(args, "--num-layers", shape.layers);
  add(args, "--hidden-size", shape.hidden);
  add(args, "--ffn-hidden-size", shape.intermediate);
  add(args, "--num-attention-heads", shape.heads);
  // Megatron takes a head's width as hidden / heads unless told (validate_args): Gemma's 256 must be said.
  if (shape.head_dim > 0 && shape.head_dim * shape.heads != shape.hidden)
    add(args, "--kv-channels", shape.head_dim);
}

void add_gpt_block_flags(std::vector<Argument>& args, const models::TransformerShape& shape,
                         const std::string& rms_norm)
{
  if (shape.gated_mlp)
    args.push_back({"--swiglu", ""});
  if (shape.rms_norm)
    args.push_back({"--normalization", rms_norm});
  if (!shape.biases)
    args.push_back({"--disable-bias-linear", ""});
  if (!shape.tied_embeddings)
    args.push_back({"--untie-embeddings-and-output-weights", ""});
}

std::string pipeline_layout(const std::vector<int>& blocks)
{
  std::string layout;
  for (std::size_t s = 0; s < blocks.size(); ++s) {
    if (s > 0)
      layout += '|';
    if (s == 0)
      layout += 'E';
    if (blocks[s] == 1)
      layout += 't';
    else if (blocks[s] > 1)
      layout += "t*" + std::to_string(blocks[s]);
    if (s + 1 == blocks.size())
      layout += ",L"; // commas are cosmetic to Megatron: "t*3,L" reads as "tttL"
  }
  return layout;
}

std::vector<Argument> megatron_arguments(const ExportInputs& inputs)
{
  require_runnable_under(inputs, strategies::Framework::megatron, "Megatron-LM");
  const Plan& plan = *inputs.plan;
  if (plan.pp > 1 && plan.schedule == strategies::PipelineSchedule::gpipe)
    refuse_plan_field(inputs, "schedule",
                      "gpipe: Megatron-LM runs pipelines with 1F1B only; set \"schedule\": \"1f1b\" "
                      "and simulate again");
  if (plan.pp > 1 && plan.schedule == strategies::PipelineSchedule::zero_bubble)
    refuse_plan_field(inputs, "schedule",
                      "zero_bubble: Megatron-LM has no zero-bubble schedule (sail-sg's fork of it adds one); set "
                      "\"schedule\": \"1f1b\" and simulate again");

  std::vector<Argument> args;
  add(args, "--tensor-model-parallel-size", plan.tp);
  add(args, "--pipeline-model-parallel-size", plan.pp);
  if (plan.ep > 1)
    add(args, "--expert-model-parallel-size", plan.ep);
  if (plan.cp > 1) { // ring attention, as simulated: key-value blocks passed round the group
    add(args, "--context-parallel-size", plan.cp);
    args.push_back({"--cp-comm-type", "p2p"});
  }
  // Megatron-Core sends 1/tp of a stage's boundary per rank (framework.hpp: scatter_gather_sends) only with
  // sequence parallelism; without it every rank sends the whole activation, as SC'21 Megatron-LM's scatter-gather
  // no longer exists there.
  if (plan.splits_sequence())
    args.push_back({"--sequence-parallel", ""});
  else if (plan.tp > 1 && inputs.workload->mixture_of_experts())
    refuse_plan_field(inputs, "sequence_parallel",
                      "false with tp " + std::to_string(plan.tp) +
                          " on a mixture of experts: Megatron-LM requires sequence parallelism with tensor-parallel "
                          "MoE layers; set \"sequence_parallel\": true and simulate again");
  else if (plan.tp > 1 && plan.pp > 1 && plan.framework.scatter_gather_sends)
    refuse_plan_field(inputs, "sequence_parallel",
                      "false with scatter-gather sends: Megatron-Core without sequence parallelism sends whole "
                      "activations between stages; set \"sequence_parallel\": true, or the framework's "
                      "\"scatter_gather_sends\": false, and simulate again");
  // Megatron's default rank order, tp-cp-ep-dp-pp, is the plan's: rank = (stage x dp + replica) x tp + tp_rank,
  // a replica's cp ranks consecutive in dp.
  add(args, "--micro-batch-size", plan.micro_batch[0]);
  add(args, "--global-batch-size", plan.global_batch());
  add_model(args, inputs);
  add_precision(args, plan);
  if (plan.recompute) { // every block recomputed from its input, as the plan was simulated
    args.push_back({"--recompute-granularity", "full"});
    args.push_back({"--recompute-method", "uniform"});
    add(args, "--recompute-num-layers", 1);
  }
  add_selective_recompute(args, inputs, "Megatron-LM");
  add_data_parallel(args, inputs);

  // Blocks per model chunk: per stage, or per virtual stage in pipeline order (Megatron-Core reads a layout of
  // pp x vpp stages the same way, stage i on pipeline rank i % pp, and infers vpp from its length).
  const std::vector<int> blocks = blocks_per_stage(inputs, "Megatron-LM");
  const bool even               = std::all_of(blocks.begin(), blocks.end(), [&](int b) { return b == blocks[0]; });
  if (plan.pp > 1 && !even)
    args.push_back({"--pipeline-model-parallel-layout", pipeline_layout(blocks)});
  else if (plan.virtual_stages > 1)
    add(args, "--num-layers-per-virtual-pipeline-stage", blocks[0]);
  if (plan.virtual_stages > 1 && plan.microbatch_group > 0)
    add(args, "--microbatch-group-size-per-virtual-pipeline-stage", plan.microbatch_group);
  return args;
}

} // namespace hetsim::launch
