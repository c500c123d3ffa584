#include "launch/megatron_deepspeed_args.hpp"

#include "core/error.hpp"
#include "launch/deepspeed_config.hpp"
#include "strategies/plan/framework.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace hetsim::launch {
namespace {

using strategies::Plan;

const std::string kWho = "Megatron-DeepSpeed";

void add(std::vector<Argument>& args, std::string flag, long long value)
{
  args.push_back({std::move(flag), std::to_string(value)});
}

std::string join(const std::vector<int>& values)
{
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

/// The model by megatron/arguments.py's names (l.599-688): Megatron-DeepSpeed's GPT blocks take rotary positions
/// with an int theta and no scaling, GQA as key-value heads, biases on every linear layer or none.
void add_model(std::vector<Argument>& args, const ExportInputs& inputs)
{
  const models::TransformerShape& shape = megatron_gpt_shape(inputs, kWho, models::AttentionKernel::flash2);
  if (shape.mixture_of_experts())
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + " is a mixture of experts: " + kWho +
                           "'s --num-experts runs DeepSpeed-MoE's gate and dispatch, not the grouped experts "
                           "simulated");
  if (shape.latent_attention())
    refuse_model_field(inputs, "kv_lora_rank", "multi-latent attention has no " + kWho + " flag");
  if (shape.qk_norm)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s norms on the queries and keys have no " + kWho + " flag");
  if (shape.qkv_bias && !shape.biases)
    refuse_model_field(inputs, "model_type",
                       shape.type_name() + "'s biases on the query, key and value alone have no " + kWho +
                           " flag (--disable-bias-linear drops them all)");
  add_gpt_dimensions(args, shape);
  if (shape.kv_heads != shape.heads)
    add(args, "--num-key-value-heads", shape.kv_heads);
  add(args, "--seq-length", shape.seq_len);
  add(args, "--max-position-embeddings", std::max(shape.max_positions, shape.seq_len));
  if (shape.max_positions == 0) { // rotary positions
    if (!shape.rope_scaling.empty())
      throw InputError(inputs.model_origin + ": rope_scaling: \"" + shape.rope_scaling + "\" has no " + kWho +
                       " flag (its rotary embedding takes a theta and a share of the head only)");
    if (shape.rope_base != std::round(shape.rope_base) || shape.rope_base > 2e9)
      throw InputError(inputs.model_origin + ": rope_theta: expected a whole number for " + kWho +
                       "'s --rotary-position-embeddings-theta (an int)");
    args.push_back({"--use-rotary-position-embeddings", ""});
    if (shape.rope_base != 10000) // its default, megatron/arguments.py:635
      add(args, "--rotary-position-embeddings-theta", std::llround(shape.rope_base));
    if (shape.rotary_percent != 1)
      args.push_back({"--rotary-percent", format_arg(shape.rotary_percent)});
  }
  add_gpt_block_flags(args, shape, "rmsnorm");
  if (shape.flash_attention) // as simulated: no s x s scores kept (FlashAttention-2, transformer.py:396)
    args.push_back({"--use-flash-attn-v2", ""});
  // The simulated model's vocabulary is padded to a multiple of 128 (framework.hpp, eager_modules); Megatron pads
  // to 128 x tp (megatron/tokenizer/tokenizer.py:63-64), a difference of under 0.1% of the parameters.
  add(args, "--make-vocab-size-divisible-by", 128);
}

/// With pp > 1, what DeepSpeed's PipelineEngine does with GPTModelPipe is what the plan simulated: its blocking
/// sends, no mask sent, its partitioned sends over sequence-parallel shards, and GPTModelPipe's stages.
void check_pipeline(const ExportInputs& inputs)
{
  const Plan& plan                               = *inputs.plan;
  const strategies::FrameworkSettings& framework = plan.framework;
  if (!framework.blocking_sends)
    refuse_plan_field(inputs, "framework.blocking_sends",
                      "false with pp " + std::to_string(plan.pp) + ": " + kWho +
                          "'s pipeline engine (DeepSpeed's) sends with blocking torch.distributed.send");
  if (framework.sends_attention_mask)
    refuse_plan_field(inputs, "framework.sends_attention_mask",
                      "true: " + kWho +
                          "'s GPTModelPipe caches its mask (pretrain_gpt.py:76) and sends the "
                          "activation alone");
  // pipe_partitioned splits each rank's tensor into 1/tp parts that the receiver gathers: right when the tp ranks
  // hold the same activation, wrong for sequence-parallel shards, which must go whole (pipe_partitioned false).
  if (plan.splits_sequence() && framework.partitioned_sends)
    refuse_plan_field(inputs, "sequence_parallel",
                      "true with partitioned sends: DeepSpeed's pipe_partitioned would split each rank's shard of "
                      "the sequence again; set the framework's \"partitioned_sends\": false, or \"sequence_parallel\": "
                      "false, and simulate again");
  if (plan.tp > 1 && framework.scatter_gather_sends && !plan.splits_sequence())
    refuse_plan_field(inputs, "framework.scatter_gather_sends",
                      "true without sequence parallelism: " + kWho +
                          "'s ranks then hold the whole boundary, which "
                          "DeepSpeed's pipeline engine sends whole or partitioned (\"partitioned_sends\")");
  const std::vector<int> planned = blocks_per_stage(inputs, kWho);
  const std::vector<int> expected =
      gpt_model_pipe_blocks(std::accumulate(planned.begin(), planned.end(), 0), plan.pp, plan.dtype != Dtype::fp32);
  if (planned != expected)
    refuse_plan_field(inputs, "stage_starts",
                      "blocks per stage " + join(planned) + ": " + kWho +
                          "'s GPTModelPipe places them by "
                          "partition_method 'type:transformer' (DeepSpeed's partition_balanced), " +
                          join(expected) + "; set stage_starts so and simulate again");
}

} // namespace

std::vector<int> partition_balanced(const std::vector<double>& weights, int parts)
{
  const int n = static_cast<int>(weights.size()), m = parts;
  std::vector<int> bounds(m + 1, 0);
  if (n <= m) { // partition_uniform's trivial case (utils.py:566-569)
    for (int p = 0; p <= m; ++p)
      bounds[p] = std::min(p, n);
    return bounds;
  }
  // Python's max(a, b) and min(a, b) keep a unless b is strictly beyond it; inf - inf is NaN, which no >= holds.
  const auto py_max    = [](double a, double b) { return b > a ? b : a; };
  const auto py_min    = [](double a, double b) { return b < a ? b : a; };
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto table     = [&](double fill) {
    return std::vector<std::vector<double>>(n + 1, std::vector<double>(m + 1, fill));
  };
  auto dp_max = table(inf), dp_min = table(inf), dp_cost = table(inf);
  std::vector<std::vector<int>> position(n + 1, std::vector<int>(m + 1, 0));
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + weights[i];
  dp_max[0][0]  = 0;
  dp_cost[0][0] = 0;
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= std::min(i, m); ++j)
      for (int k = 0; k < i; ++k) {
        const double max_sum = py_max(dp_max[k][j - 1], prefix[i] - prefix[k]);
        const double min_sum = py_min(dp_min[k][j - 1], prefix[i] - prefix[k]);
        const double cost    = max_sum - min_sum;
        if (dp_cost[i][j] >= cost) {
          dp_cost[i][j]  = cost;
          dp_max[i][j]   = max_sum;
          dp_min[i][j]   = min_sum;
          position[i][j] = k;
        }
      }
  bounds[m] = n;
  for (int j = m; j >= 1; --j)
    bounds[j - 1] = position[bounds[j]][j];
  return bounds;
}

std::vector<int> gpt_model_pipe_blocks(int blocks, int stages, bool sixteen_bit)
{
  // _to_float16, the embedding, the blocks, the final norm, the head, and float16_to_fp32 in 16-bit training.
  std::vector<double> weights = {0, 0};
  weights.insert(weights.end(), blocks, 1.0);
  weights.insert(weights.end(), sixteen_bit ? 3 : 2, 0.0);
  const std::vector<int> bounds = partition_balanced(weights, stages);
  std::vector<int> per_stage(stages, 0);
  for (int s = 0; s < stages; ++s)
    for (int i = bounds[s]; i < bounds[s + 1]; ++i)
      per_stage[s] += static_cast<int>(weights[i]);
  return per_stage;
}

std::vector<Argument> megatron_deepspeed_arguments(const ExportInputs& inputs, const std::string& config_path)
{
  require_runnable_under(inputs, strategies::Framework::megatron_deepspeed, kWho);
  check_engine_runnable(inputs);
  const Plan& plan = *inputs.plan;
  if (plan.pp > 1)
    check_pipeline(inputs);

  std::vector<Argument> args;
  add(args, "--tensor-model-parallel-size", plan.tp);
  add(args, "--pipeline-model-parallel-size", plan.pp);
  if (plan.pp == 1) // Megatron's GPTModel in DeepSpeed's engine, which then runs ZeRO-2/3 too
    args.push_back({"--no-pipeline-parallel", ""});
  if (plan.splits_sequence())
    args.push_back({"--sequence-parallel", ""});
  add(args, "--micro-batch-size", plan.micro_batch[0]);
  add(args, "--global-batch-size", plan.global_batch());
  add_model(args, inputs);
  if (plan.dtype == Dtype::bf16)
    args.push_back({"--bf16", ""});
  else if (plan.dtype == Dtype::fp16)
    args.push_back({"--fp16", ""});
  if (plan.recompute) { // every block recomputed from its input, by DeepSpeed's checkpointing
    args.push_back({"--deepspeed-activation-checkpointing", ""});
    args.push_back({"--recompute-granularity", "full"});
    args.push_back({"--recompute-method", "uniform"}); // GPTModelPipe's interval (gpt_model.py:448-450)
    add(args, "--recompute-num-layers", 1);
  }
  add_selective_recompute(args, inputs, "Megatron-DeepSpeed"); // core attention (transformer.py:629)
  add(args, "--zero-stage", plan.zero_stage);
  args.push_back({"--deepspeed", ""});
  args.push_back({"--deepspeed_config", config_path, true});
  return args;
}

} // namespace hetsim::launch
