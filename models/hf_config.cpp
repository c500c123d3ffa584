#include "models/hf_config.hpp"

#include "core/error.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

namespace hetsim::models {
namespace {

/// Reads what a family's config names differently into `shape`; defaults are those of the transformers library,
/// so a config saved without a field means what it means to Hugging Face.
using FamilyReader = void (*)(const JsonInput& config, TransformerShape& shape);

/// The largest size a config may give (a width, a rank, a count of heads, experts or positions, a vocabulary):
/// 2^24, some 300 times the largest of any published model, and small enough that the sums and products of sizes
/// HetSim computes stay exact and in range.
constexpr int kMaxSize = 1 << 24;

int size_field(const JsonInput& value)
{
  const int size = value.positive_int();
  if (size > kMaxSize)
    value.fail("a positive integer of at most " + std::to_string(kMaxSize));
  return size;
}

int size_or(const JsonInput& config, std::string_view key, int fallback)
{
  const auto value = config.find(key);
  return value ? size_field(*value) : fallback;
}

/// Attention heads must split the hidden size evenly, and query heads must group evenly over key/value heads.
void check_heads(const JsonInput& config, const TransformerShape& shape, std::string_view hidden_key,
                 std::string_view heads_key, std::string_view kv_heads_key)
{
  if (shape.hidden % shape.heads != 0)
    config.at(heads_key).fail("a divisor of " + std::string(hidden_key) + " (" + std::to_string(shape.hidden) + ")");
  if (shape.heads % shape.kv_heads != 0)
    config.at(kv_heads_key).fail("a divisor of " + std::string(heads_key) + " (" + std::to_string(shape.heads) + ")");
}

/// The deepest models have a few hundred layers; far more is a typo that would exhaust memory.
int read_layer_count(const JsonInput& value)
{
  constexpr int kMaxLayers = 100'000;
  const int layers         = value.positive_int();
  if (layers > kMaxLayers)
    value.fail("at most " + std::to_string(kMaxLayers) + " layers");
  return layers;
}

/// The MLP width a config may leave out: `key`'s value, else 4 x hidden as transformers computes it.
int mlp_width_or_four_hidden(const JsonInput& config, std::string_view key, int hidden)
{
  return size_or(config, key, 4 * hidden);
}

/// Rotary positions: the frequencies' base under `base_key` (transformers' default 10,000), the share of a head
/// they turn under `percent_key` or its newer name partial_rotary_factor (`percent` when neither is given), and
/// `rope_scaling` ({"rope_type" or "type", "factor", YaRN's "mscale" and "mscale_all_dim"}), which transformers
/// reads the same way in every family.
void read_rotary(const JsonInput& config, TransformerShape& shape, std::string_view base_key,
                 std::string_view percent_key = "partial_rotary_factor", double percent = 1)
{
  shape.max_positions = 0; // rotary positions have no weights
  shape.rope_base     = config.positive_number_or(base_key, 10000);
  for (std::string_view key : {percent_key, std::string_view("partial_rotary_factor")})
    if (config.has(key)) {
      percent = config.at(key).positive_number();
      if (percent > 1)
        config.at(key).fail("a share of a head's width in (0, 1]");
      break;
    }
  shape.rotary_percent = percent;
  const auto scaling = config.find("rope_scaling");
  if (!scaling)
    return;
  if (!scaling->is_object())
    scaling->fail("an object {\"rope_type\": ..., \"factor\": ...} or null");
  const auto type = scaling->find("rope_type") ? scaling->at("rope_type") : scaling->at("type");
  shape.rope_scaling = type.string() == "default" ? "" : type.string();
  if (shape.rope_scaling.empty())
    return;
  shape.rope_scaling_factor = scaling->positive_number_or("factor", 1);
  shape.rope_mscale         = scaling->positive_number_or("mscale", 1);
  shape.rope_mscale_all_dim = scaling->positive_number_or("mscale_all_dim", 1);
}

/// The dimensions most families name alike (LlamaConfig's keys): widths, blocks, heads and key-value heads,
/// vocabulary, positions; embeddings untied unless the file says so.
void read_dimensions(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = size_field(config.at("hidden_size"));
  shape.intermediate    = size_field(config.at("intermediate_size"));
  shape.layers          = read_layer_count(config.at("num_hidden_layers"));
  shape.heads           = size_field(config.at("num_attention_heads"));
  shape.kv_heads        = size_or(config, "num_key_value_heads", shape.heads);
  shape.vocab           = size_field(config.at("vocab_size"));
  shape.seq_len         = size_or(config, "max_position_embeddings", 2048);
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", false);
}

void read_llama(const JsonInput& config, TransformerShape& shape)
{
  read_dimensions(config, shape);
  read_rotary(config, shape, "rope_theta");
  shape.gated_mlp       = true;
  const bool attention_bias = config.boolean_or("attention_bias", false);
  const bool mlp_bias       = config.boolean_or("mlp_bias", false);
  shape.biases                = attention_bias && mlp_bias;
  shape.qkv_bias              = attention_bias; // q, k, v and o_proj (LlamaAttention)
  shape.attention_output_bias = attention_bias;
  shape.mlp_bias              = mlp_bias;
  shape.rms_norm = true;
  // Newer configs spell out head_dim, which may differ from hidden / heads (Gemma: 256).
  if (auto head_dim = config.find("head_dim")) {
    const int width = size_field(*head_dim);
    if (shape.hidden % shape.heads != 0 || width != shape.hidden / shape.heads)
      shape.head_dim = width;
  }
  if (shape.head_dim == 0 && shape.hidden % shape.heads != 0)
    config.at("num_attention_heads")
        .fail("a divisor of hidden_size (" + std::to_string(shape.hidden) + "), or a head_dim");
  if (shape.heads % shape.kv_heads != 0)
    config.at("num_key_value_heads")
        .fail("a divisor of num_attention_heads (" + std::to_string(shape.heads) + ")");
}

/// Qwen2: Llama's layout with biases on the query, key and value projections.
void read_qwen2(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.qkv_bias = true;
}

/// Qwen3: Llama's layout (no biases unless attention_bias) with an RMSNorm on each head's queries and keys, and a
/// head_dim of its own (modeling_qwen3.py: Qwen3Attention's q_norm and k_norm).
void read_qwen3(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.qk_norm = true;
}

/// OLMo 2: Llama's layout with its two norms after each sublayer rather than before (the same passes and
/// parameters, priced as Llama's) and a norm over all heads' queries and another over the keys
/// (modeling_olmo2.py: Olmo2Attention's q_norm of num_attention_heads x head_dim).
void read_olmo2(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.qk_norm             = true;
  shape.qk_norm_whole_width = true;
}

/// Llama's layout with tied embeddings unless the file says otherwise: Gemma (a GeGLU MLP, the same weights as
/// SwiGLU, and a head width of its own) and SmolLM3 (its NoPE blocks, every fourth by no_rope_layers, are priced
/// with a rotary pass too many); their config classes' default.
void read_tied_llama(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
}

/// Gemma-2: Gemma's layout that also normalises each sublayer's output.
void read_gemma2(const JsonInput& config, TransformerShape& shape)
{
  read_tied_llama(config, shape);
  shape.sandwich_norms = true;
}

/// Gemma 3's text model: Gemma-2's four norms per block and a norm on each head's queries and keys
/// (modeling_gemma3.py: Gemma3Attention's q_norm, k_norm). Its local blocks' window is sliding_window, as
/// Gemma-2's.
void read_gemma3(const JsonInput& config, TransformerShape& shape)
{
  read_gemma2(config, shape);
  shape.qk_norm = true;
}

/// Top-k out of `experts`, read from `key`.
int read_experts_per_token(const JsonInput& config, std::string_view key, int fallback, int experts)
{
  const int top_k = size_or(config, key, fallback);
  if (top_k > experts)
    config.at(key).fail("at most the " + std::to_string(experts) + " experts");
  return top_k;
}

/// Mixtral: Mistral's attention; every block's MLP is num_local_experts SwiGLU experts of intermediate_size.
void read_mixtral(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.experts             = size_or(config, "num_local_experts", 8);
  shape.experts_per_token   = read_experts_per_token(config, "num_experts_per_tok", 2, shape.experts);
  shape.expert_intermediate = shape.intermediate;
}

/// How a DeepSeek or Qwen2-MoE router picks experts (modeling_deepseek.py's MoEGate, modeling_qwen2_moe.py):
/// scoring_func, norm_topk_prob, group-limited top-k (topk_method "group_limited_greedy" or "noaux_tc" over
/// n_group groups, topk_group of them) and routed_scaling_factor.
void read_router(const JsonInput& config, TransformerShape& shape)
{
  if (const auto scoring = config.find("scoring_func")) {
    const std::string name = scoring->string();
    if (name != "softmax" && name != "sigmoid")
      scoring->fail("\"softmax\" or \"sigmoid\"");
    shape.sigmoid_router = name == "sigmoid";
  }
  shape.router_pre_softmax = !shape.sigmoid_router && !config.boolean_or("norm_topk_prob", false);
  const std::string method = config.string_or("topk_method", "greedy");
  if (method == "group_limited_greedy" || method == "noaux_tc") {
    shape.router_groups     = size_field(config.at("n_group"));
    shape.router_group_topk = size_field(config.at("topk_group"));
    if (shape.experts % shape.router_groups != 0)
      config.at("n_group").fail("a divisor of the " + std::to_string(shape.experts) + " routed experts");
    if (shape.router_group_topk > shape.router_groups)
      config.at("topk_group").fail("at most n_group (" + std::to_string(shape.router_groups) + ")");
  }
  if (const auto scale = config.find("routed_scaling_factor"); scale && scale->positive_number() != 1)
    shape.router_topk_scale = scale->positive_number();
}

/// The sparse blocks of Qwen's mixture-of-experts configs: every decoder_sparse_step-th block holds num_experts
/// experts of moe_intermediate_size, num_experts_per_tok of them a token; defaults are the config class's.
void read_qwen_experts(const JsonInput& config, TransformerShape& shape, int experts, int top_k, int width)
{
  shape.experts             = size_or(config, "num_experts", experts);
  shape.experts_per_token   = read_experts_per_token(config, "num_experts_per_tok", top_k, shape.experts);
  shape.expert_intermediate = size_or(config, "moe_intermediate_size", width);
  shape.sparse_step         = size_or(config, "decoder_sparse_step", 1);
  read_router(config, shape);
  if (auto dense = config.find("mlp_only_layers"); dense && !dense->value().empty())
    dense->fail("[] (dense blocks listed by index are not modelled; decoder_sparse_step chooses them)");
}

/// Qwen2-MoE: Qwen2's attention; its sparse blocks also hold a gated shared expert of
/// shared_expert_intermediate_size; the others a dense MLP of intermediate_size (Qwen2MoeConfig's defaults).
void read_qwen2_moe(const JsonInput& config, TransformerShape& shape)
{
  read_qwen2(config, shape);
  read_qwen_experts(config, shape, 60, 4, 1408);
  shape.shared_expert_intermediate = size_or(config, "shared_expert_intermediate_size", 5632);
  shape.shared_expert_gate         = true;
}

/// Qwen3-MoE: Qwen3's attention (q and k norms, no biases) and sparse blocks without a shared expert
/// (modeling_qwen3_moe.py: Qwen3MoeSparseMoeBlock; Qwen3MoeConfig's defaults).
void read_qwen3_moe(const JsonInput& config, TransformerShape& shape)
{
  read_qwen3(config, shape);
  read_qwen_experts(config, shape, 128, 8, 768);
}

/// DeepSeek-V2/V3: multi-head latent attention, and DeepSeekMoE blocks after the first first_k_dense_replace
/// dense ones: n_routed_experts of moe_intermediate_size, n_shared_experts as one shared MLP of that width times
/// their count (no gate), the router with a score bias under V3's "noaux_tc" top-k. Field names and defaults
/// are those of DeepseekV2Config/DeepseekV3Config.
void read_deepseek(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  shape.kv_heads         = shape.heads; // the latent is shared; every head gets its own keys and values
  if (auto rank = config.find("q_lora_rank"); rank && !rank->value().is_null())
    shape.q_lora_rank = size_field(*rank);
  shape.kv_lora_rank     = size_field(config.at("kv_lora_rank"));
  shape.qk_nope_head_dim = size_field(config.at("qk_nope_head_dim"));
  shape.qk_rope_head_dim = size_field(config.at("qk_rope_head_dim"));
  shape.v_head_dim       = size_field(config.at("v_head_dim"));
  auto routed            = config.find("n_routed_experts");
  if (!routed || routed->value().is_null())
    return; // dense
  shape.experts             = size_field(*routed);
  shape.experts_per_token   = read_experts_per_token(config, "num_experts_per_tok", 2, shape.experts);
  shape.expert_intermediate = size_field(config.at("moe_intermediate_size"));
  if (auto shared = config.find("n_shared_experts"); shared && !shared->value().is_null())
    shape.shared_expert_intermediate = size_field(*shared) * shape.expert_intermediate;
  shape.first_dense_blocks = size_or(config, "first_k_dense_replace", 0);
  if (auto frequency = config.find("moe_layer_freq"); frequency && size_field(*frequency) != 1)
    frequency->fail("1 (sparse blocks at other intervals are not modelled)");
  shape.router_bias = config.string_or("topk_method", "") == "noaux_tc";
  read_router(config, shape);
}

/// The dimensions GPT-2's config names (n_embd, n_layer, n_head, n_inner or 4 x n_embd, vocab_size); returns its
/// n_positions, `positions` when not given.
int read_gpt2_dimensions(const JsonInput& config, TransformerShape& shape, int positions)
{
  shape.hidden       = size_field(config.at("n_embd"));
  shape.layers       = read_layer_count(config.at("n_layer"));
  shape.heads        = size_field(config.at("n_head"));
  shape.kv_heads     = shape.heads;
  shape.intermediate = mlp_width_or_four_hidden(config, "n_inner", shape.hidden);
  shape.vocab        = size_field(config.at("vocab_size"));
  check_heads(config, shape, "n_embd", "n_head", "n_head");
  return size_or(config, "n_positions", positions);
}

void read_gpt2(const JsonInput& config, TransformerShape& shape)
{
  shape.max_positions   = read_gpt2_dimensions(config, shape, 1024);
  shape.seq_len         = shape.max_positions;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
}

void read_bert(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = size_field(config.at("hidden_size"));
  shape.layers          = read_layer_count(config.at("num_hidden_layers"));
  shape.heads           = size_field(config.at("num_attention_heads"));
  shape.kv_heads        = shape.heads;
  shape.intermediate    = size_field(config.at("intermediate_size"));
  shape.vocab           = size_field(config.at("vocab_size"));
  shape.max_positions   = size_or(config, "max_position_embeddings", 512);
  shape.seq_len         = shape.max_positions;
  shape.type_vocab      = config.find("type_vocab_size") ? config.at("type_vocab_size").non_negative_int() : 2;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  shape.post_norm       = true;
  shape.pooler          = true;
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_attention_heads");
}

/// GPT-NeoX (Pythia): rotary positions, LayerNorm, biases everywhere, untied embeddings; the parallel residual
/// changes no weight.
void read_gpt_neox(const JsonInput& config, TransformerShape& shape)
{
  read_dimensions(config, shape);
  shape.kv_heads = shape.heads; // GPT-NeoX has no grouped-query attention
  read_rotary(config, shape, "rotary_emb_base", "rotary_pct", 0.25); // GPTNeoXConfig's defaults
  shape.biases          = config.boolean_or("attention_bias", true);
  shape.parallel_residual = config.boolean_or("use_parallel_residual", true);
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_attention_heads");
}

/// Falcon: multi-query attention (or grouped, new_decoder_architecture), no linear biases, LayerNorm; with
/// parallel attention one norm feeds both sublayers unless the new architecture gives each its own.
/// Phi (Phi-1, 1.5 and 2): attention and MLP in parallel off one LayerNorm, biases on every linear layer and
/// on the output projection, a rotary embedding over partial_rotary_factor of each head, a gelu_new MLP
/// (modeling_phi.py: PhiDecoderLayer; PhiConfig's defaults). Its resid_pdrop dropout is left out of the cost.
void read_phi(const JsonInput& config, TransformerShape& shape)
{
  read_dimensions(config, shape);
  read_rotary(config, shape, "rope_theta", "partial_rotary_factor", 0.5);
  shape.biases            = true;
  shape.logits_bias       = true;
  shape.parallel_residual = true;
  shape.shared_block_norm = true;
  if (config.boolean_or("qk_layernorm", false))
    config.at("qk_layernorm").fail("false (Phi's LayerNorms on the queries and keys are not modelled)");
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_key_value_heads");
}

void read_falcon(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden       = size_field(config.at("hidden_size"));
  shape.layers       = read_layer_count(config.at("num_hidden_layers"));
  shape.heads        = size_field(config.at("num_attention_heads"));
  shape.intermediate = mlp_width_or_four_hidden(config, "ffn_hidden_size", shape.hidden);
  shape.vocab        = size_field(config.at("vocab_size"));
  shape.seq_len      = size_or(config, "max_position_embeddings", 2048);
  if (config.boolean_or("alibi", false))
    config.at("alibi").fail("false (ALiBi attention is not modelled)");
  const bool new_architecture = config.boolean_or("new_decoder_architecture", false);
  if (new_architecture)
    shape.kv_heads = size_or(config, "num_kv_heads", shape.heads);
  else
    shape.kv_heads = config.boolean_or("multi_query", true) ? 1 : shape.heads;
  const bool parallel     = config.boolean_or("parallel_attn", true);
  shape.parallel_residual = parallel;
  shape.shared_block_norm = parallel && !(new_architecture && size_or(config, "num_ln_in_parallel_attn", 2) == 2);
  shape.tied_embeddings   = config.boolean_or("tie_word_embeddings", true);
  read_rotary(config, shape, "rope_theta");
  shape.biases            = config.boolean_or("bias", false);
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_kv_heads");
}

/// OPT: learned positions with two extra rows, LayerNorm, biases, tied embeddings, a 2-projection ReLU MLP.
void read_opt(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden        = size_field(config.at("hidden_size"));
  shape.intermediate  = size_field(config.at("ffn_dim"));
  shape.layers        = read_layer_count(config.at("num_hidden_layers"));
  shape.heads         = size_field(config.at("num_attention_heads"));
  shape.kv_heads      = shape.heads;
  shape.vocab         = size_field(config.at("vocab_size"));
  shape.max_positions = size_or(config, "max_position_embeddings", 2048);
  shape.seq_len       = shape.max_positions;
  shape.position_offset = 2;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  shape.biases          = config.boolean_or("enable_bias", true);
  if (auto projection = config.find("word_embed_proj_dim"); projection && size_field(*projection) != shape.hidden)
    projection->fail("hidden_size (" + std::to_string(shape.hidden) +
                     "): embeddings projected to another width (OPT-350m) are not modelled");
  if (!config.boolean_or("do_layer_norm_before", true))
    config.at("do_layer_norm_before").fail("true (OPT-350m's post-norm blocks are not modelled)");
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_attention_heads");
}

/// GPT-J: attention and MLP in parallel off one LayerNorm (ln_1), no biases on q, k, v or out_proj, biases on
/// the MLP's fc_in and fc_out and on the untied output projection, a rotary embedding over rotary_dim of each
/// head (all of it when null), a gelu_new MLP of n_inner or 4 x n_embd (modeling_gptj.py; GPTJConfig's defaults).
void read_gptj(const JsonInput& config, TransformerShape& shape)
{
  shape.seq_len       = read_gpt2_dimensions(config, shape, 2048);
  shape.max_positions = 0; // rotary, base 10,000 (create_sinusoidal_positions)
  const int head      = shape.hidden / shape.heads;
  const bool whole    = config.value().contains("rotary_dim") && config.value().at("rotary_dim").is_null();
  const int turned    = whole ? head : size_or(config, "rotary_dim", 64);
  if (turned > head)
    config.at("rotary_dim").fail("at most a head's width (" + std::to_string(head) + ")");
  shape.rotary_percent    = static_cast<double>(turned) / head;
  shape.biases            = false;
  shape.mlp_bias          = true;
  shape.logits_bias       = true;
  shape.parallel_residual = true;
  shape.shared_block_norm = true;
  shape.tied_embeddings   = config.boolean_or("tie_word_embeddings", false);
}

/// BLOOM: ALiBi positions, a LayerNorm on the word embeddings (word_embeddings_layernorm), biases on every
/// linear layer and norm, one query_key_value module, a GeLU MLP of 4 x hidden (BloomMLP reads no n_inner) whose
/// tanh approximation runs op by op in training (BloomGelu's GeLUFunction), tied embeddings (modeling_bloom.py;
/// BloomConfig, which takes the older n_embed for hidden_size and n_layer, n_head under their common names too).
/// Hugging Face's BloomAttention is eager: the ALiBi bias enters the scores' product (baddbmm), the softmax is
/// fp32.
void read_bloom(const JsonInput& config, TransformerShape& shape)
{
  const auto named = [&](std::string_view key, std::string_view other) {
    return config.find(key) ? config.at(key) : config.at(other);
  };
  shape.hidden       = size_field(named("n_embed", "hidden_size"));
  shape.layers       = read_layer_count(named("n_layer", "num_hidden_layers"));
  shape.heads        = size_field(named("n_head", "num_attention_heads"));
  shape.kv_heads     = shape.heads;
  shape.intermediate = 4 * shape.hidden;
  shape.vocab        = size_field(config.at("vocab_size"));
  shape.seq_len      = 2048; // BLOOM's training length; its config names none (ALiBi has no table)
  shape.max_positions   = 0;
  shape.alibi           = true;
  shape.biases          = true;
  shape.embedding_norm  = true;
  shape.gelu_as_modules = true;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  if (config.boolean_or("apply_residual_connection_post_layernorm", false))
    config.at("apply_residual_connection_post_layernorm")
        .fail("false (a residual taken after the norm is not modelled)");
  check_heads(config, shape, "hidden_size", "n_head", "n_head");
}

/// StarCoder2: Llama's names and grouped-query attention with LayerNorms, biases on every linear layer under
/// use_bias, a GeLU (gelu_pytorch_tanh, one kernel) MLP of intermediate_size, rotary positions, tied
/// embeddings; its sliding window as Mistral's (modeling_starcoder2.py; Starcoder2Config's defaults).
void read_starcoder2(const JsonInput& config, TransformerShape& shape)
{
  read_dimensions(config, shape);
  read_rotary(config, shape, "rope_theta");
  shape.biases          = config.boolean_or("use_bias", true);
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_key_value_heads");
}

/// gpt-oss: Llama's names with biases on q, k, v and o_proj (attention_bias, true by default), a learned sink
/// logit per head, every block a mixture of num_local_experts SwiGLU experts of intermediate_size with biases
/// on the router and the experts, num_experts_per_tok a token (modeling_gpt_oss.py; GptOssConfig's defaults).
/// Its clamped SwiGLU is priced as SwiGLU; its sliding-window blocks (layer_types) as full ones.
void read_gpt_oss(const JsonInput& config, TransformerShape& shape)
{
  read_llama(config, shape);
  const bool attention_bias   = config.boolean_or("attention_bias", true);
  shape.qkv_bias              = attention_bias;
  shape.attention_output_bias = attention_bias;
  shape.attention_sinks       = true;
  shape.experts               = size_or(config, "num_local_experts", 128);
  shape.experts_per_token     = read_experts_per_token(config, "num_experts_per_tok", 4, shape.experts);
  shape.expert_intermediate   = shape.intermediate;
  shape.expert_biases         = true;
}

/// MPT as Hugging Face's MptModel runs it: ALiBi positions (no embedding table), one Wqkv module, LayerNorms and
/// linears without biases under no_bias, a GeLU MLP of expansion_ratio x d_model, tied embeddings. Its own
/// training code (llm-foundry) offers other attention types and rotary positions; MptModel has neither.
void read_mpt(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = size_field(config.at("d_model"));
  shape.layers          = read_layer_count(config.at("n_layers"));
  shape.heads           = size_field(config.at("n_heads"));
  shape.kv_heads        = shape.heads;
  shape.vocab           = size_field(config.at("vocab_size"));
  shape.intermediate    = static_cast<int>(std::lround(config.positive_number_or("expansion_ratio", 4) * shape.hidden));
  shape.seq_len         = size_or(config, "max_seq_len", 2048);
  shape.max_positions   = 0;
  shape.alibi           = true;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  shape.biases          = !config.boolean_or("no_bias", true);
  shape.norm_biases     = shape.biases; // MptBlock: norm_1.bias = None, norm_2.bias = None; MptModel: norm_f too
  if (auto attention = config.find("attn_config")) {
    if (!attention->value().is_object())
      attention->fail("an object (MptAttentionConfig)");
    if (attention->string_or("attn_type", "multihead_attention") != "multihead_attention")
      attention->at("attn_type").fail("\"multihead_attention\" (Hugging Face's MptAttention has no other)");
    if (!attention->boolean_or("alibi", true))
      attention->at("alibi").fail("true (Hugging Face's MptModel has ALiBi positions only)");
    if (attention->boolean_or("qk_ln", false))
      attention->at("qk_ln").fail("false (norms on the queries and keys are not modelled)");
    if (attention->boolean_or("prefix_lm", false))
      attention->at("prefix_lm").fail("false (a prefix language model's bidirectional mask is not modelled)");
    // MosaicML's own training code runs the kernel attn_impl names; "torch" is Hugging Face's eager MptAttention.
    const std::string impl = attention->string_or("attn_impl", "torch");
    if (impl == "flash")
      shape.attention = AttentionKernel::flash2;
    else if (impl == "triton")
      shape.attention = AttentionKernel::triton;
    else if (impl != "torch")
      attention->at("attn_impl").fail("\"torch\", \"flash\" or \"triton\"");
  }
  check_heads(config, shape, "d_model", "n_heads", "n_heads");
}

struct Family {
  std::string_view model_type;
  std::string_view architecture_prefix; ///< for configs that only list "architectures"
  std::string_view family;
  FamilyReader read;
  /// Trained with fused (flash) attention unless the file says otherwise: the families whose published
  /// training runs and Hugging Face implementations use it. GPT-2, BERT and OPT runs predate it.
  bool flash_attention;
};

// Mistral and Phi-3 use Llama's field names and weights (Phi-3 fuses QKV and gate/up, same counts).
constexpr std::array kFamilies{
    Family{"llama", "Llama", "llama", read_llama, true},
    Family{"mistral", "Mistral", "llama", read_llama, true},
    Family{"phi3", "Phi3", "llama", read_llama, true},
    Family{"qwen3_moe", "Qwen3Moe", "llama", read_qwen3_moe, true}, // before Qwen3, whose prefix it starts with
    Family{"qwen3", "Qwen3", "llama", read_qwen3, true},
    Family{"qwen2_moe", "Qwen2Moe", "llama", read_qwen2_moe, true},
    Family{"qwen2", "Qwen2", "llama", read_qwen2, true},
    Family{"mixtral", "Mixtral", "llama", read_mixtral, true},
    // Hugging Face's gpt-oss attention is eager unless FlashAttention 3 with sinks is asked for.
    Family{"gpt_oss", "GptOss", "llama", read_gpt_oss, false},
    Family{"deepseek_v2", "DeepseekV2", "llama", read_deepseek, true},
    Family{"deepseek_v3", "DeepseekV3", "llama", read_deepseek, true},
    // Granite's four multipliers (embeddings, attention scale, residuals, logits) change no cost.
    Family{"granite", "Granite", "llama", read_llama, true},
    Family{"smollm3", "SmolLM3", "llama", read_tied_llama, true},
    Family{"olmo2", "Olmo2", "llama", read_olmo2, true},
    Family{"gemma3_text", "Gemma3", "llama", read_gemma3, true}, // before Gemma, whose prefix it starts with
    Family{"gemma2", "Gemma2", "llama", read_gemma2, true},
    Family{"gemma", "Gemma", "llama", read_tied_llama, true},
    Family{"falcon", "Falcon", "falcon", read_falcon, true},
    Family{"phi", "PhiFor", "phi", read_phi, true}, // "PhiFor": not Phi3 or PhiMoE
    Family{"gpt_neox", "GPTNeoX", "gpt_neox", read_gpt_neox, true},
    Family{"gptj", "GPTJ", "gptj", read_gptj, true},
    Family{"starcoder2", "Starcoder2", "starcoder2", read_starcoder2, true},
    // Hugging Face's BloomAttention is eager (no SDPA or flash path): scores, fp32 softmax and dropout op by op.
    Family{"bloom", "Bloom", "bloom", read_bloom, false},
    // Hugging Face's MptAttention is eager: scores, ALiBi bias and softmax op by op.
    Family{"mpt", "Mpt", "mpt", read_mpt, false},
    Family{"opt", "OPT", "opt", read_opt, false},
    Family{"gpt2", "GPT2", "gpt2", read_gpt2, false},
    Family{"bert", "Bert", "bert", read_bert, false},
};

/// The way out for a model HetSim has no reader for.
constexpr std::string_view kLayerListHint =
    "; or describe the model as a layer list {\"name\", \"seq_len\", \"layers\": [...]} (docs/inputs.md, \"Model\")";

bool is_mixture_of_experts(std::string_view type)
{
  return type == "dbrx" || type == "olmoe";
}

const Family& find_family(const JsonInput& config)
{
  if (auto model_type = config.find("model_type")) {
    const std::string type = model_type->string();
    for (const auto& family : kFamilies)
      if (family.model_type == type)
        return family;
    if (is_mixture_of_experts(type))
      model_type->fail("a supported model type (" + supported_hf_families() +
                       "): this mixture-of-experts family is not modelled from a config yet; give each MoE layer's "
                       "parameters and FLOPs in a layer list {\"name\", \"seq_len\", \"layers\": [...]}");
    model_type->fail("a supported model type (" + supported_hf_families() + ")" + std::string(kLayerListHint));
  }
  JsonInput first = config.at("architectures").at(std::size_t{0});
  const std::string architecture = first.string();
  // Case aside: MosaicML's own files name "MPTForCausalLM" where Hugging Face's class is "MptForCausalLM".
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (const auto& family : kFamilies)
    if (lower(architecture).starts_with(lower(family.architecture_prefix)))
      return family;
  first.fail("an architecture of a supported family (" + supported_hf_families() + ")" +
             std::string(kLayerListHint));
}

/// `torch_dtype` (renamed `dtype` by newer transformers releases) in PyTorch's spelling.
void read_torch_dtype(const JsonInput& config, HfModel& model)
{
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto value = config.find(key);
    if (!value || value->value().is_null())
      continue;
    const std::string name = value->string();
    if (name == "float16" || name == "half")
      model.dtype = Dtype::fp16;
    else if (name == "bfloat16")
      model.dtype = Dtype::bf16;
    else if (name == "float32" || name == "float")
      model.dtype = Dtype::fp32;
    else
      value->fail("\"float16\", \"bfloat16\" or \"float32\"");
    model.dtype_origin = value->where();
    return;
  }
}

/// "attention": the kernel by name (models/attention_kernel.hpp); or the older "flash_attention": true for the
/// framework's fused kernel, false for none; or neither, the family's default.
template <typename Assume>
void read_attention(const JsonInput& config, const Family& family, TransformerShape& shape, Assume assume)
{
  auto flash = config.find("flash_attention");
  if (auto attention = config.find("attention")) {
    const auto kernel = parse_attention_kernel(attention->string());
    if (!kernel)
      attention->fail("one of " + attention_kernel_names() + " (default: the framework's)");
    if (flash)
      flash->fail("no \"flash_attention\" beside \"attention\" (which already says whether the kernel is fused)");
    shape.attention       = *kernel;
    shape.flash_attention = *kernel == AttentionKernel::framework_default ? family.flash_attention
                                                                           : !keeps_scores(*kernel);
    return;
  }
  if (flash) {
    shape.flash_attention = flash->boolean();
    return;
  }
  if (shape.attention != AttentionKernel::framework_default) { // the family's own field named it (MPT's attn_impl)
    shape.flash_attention = !keeps_scores(shape.attention);
    return;
  }
  shape.flash_attention = family.flash_attention;
  assume(std::string("attention not given: ") +
         (family.flash_attention ? "the framework's fused kernel (SDPA under Hugging Face modules, Transformer "
                                   "Engine's under Megatron-LM)"
                                 : "unfused, scores kept (eager under Hugging Face modules, the fused softmax "
                                   "under Megatron-LM)") +
         " for " + std::string(family.model_type) + " (set \"attention\": one of " + attention_kernel_names() +
         ")");
}

} // namespace

bool is_hf_config(const nlohmann::json& json)
{
  return json.is_object() && (json.contains("model_type") || json.contains("architectures"));
}

std::string supported_hf_families()
{
  std::string names;
  for (const auto& family : kFamilies)
    names += (names.empty() ? "" : ", ") + std::string(family.model_type);
  return names;
}

HfModel read_hf_config(const JsonInput& config, const std::string& default_name)
{
  if (!config.is_object())
    config.fail("an object");
  const Family& family = find_family(config);
  HfModel model;
  TransformerShape& shape = model.shape;
  shape.family            = family.family;
  shape.model_type        = family.model_type;
  shape.name              = config.string_or("_name_or_path", "");
  if (shape.name.empty())
    shape.name = default_name.empty() ? std::string(family.model_type) : default_name;
  family.read(config, shape);
  read_torch_dtype(config, model);
  auto assume = [&](const std::string& text) { model.assumptions.push_back(config.file() + ": " + text); };
  // Weights saved in fp32 are often trained in 16 bits: say what following the file means.
  if (model.dtype == Dtype::fp32)
    assume("torch_dtype float32: plans, searches and profiles that name no dtype train in fp32 (--dtype, or the "
           "plan's \"dtype\", to change it)");

  // "attention", "flash_attention" and "loss" are our extensions too: how the model is trained, not what it is.
  read_attention(config, family, shape, assume);
  if (shape.attention_sinks && shape.flash_attention && !takes_attention_sinks(shape.attention))
    config.at("attention").fail(attention_sinks_kernels());
  if (shape.attention_sinks && shape.flash_attention && shape.attention == AttentionKernel::framework_default)
    config.at("flash_attention").fail("false, or \"attention\": " + attention_sinks_kernels());
  if (auto quantization = config.find("quantization_config"))
    assume("quantization_config (" + quantization->string_or("quant_method", "unnamed") +
           "): trained as 16-bit weights, dequantized on loading as Hugging Face's fine-tuning recipes do");
  if (auto loss = config.find("loss")) {
    const auto kernel = parse_loss_kernel(loss->string());
    if (!kernel)
      loss->fail("one of " + loss_kernel_names());
    shape.loss = *kernel;
  }
  // "fused_gelu" is our extension too. Hugging Face's gelu_new (GPT-2's activation) is a Python expression,
  // so eager PyTorch runs it op by op; Megatron-LM fuses it with the bias.
  const std::string activation = config.string_or(
      "activation_function", config.string_or("hidden_act", shape.family == "gpt2" || shape.family == "gptj" ? "gelu_new" : ""));
  if (shape.gated_mlp) // Gemma says hidden_activation (hidden_act is its older key)
    shape.gelu_gate = config.string_or("hidden_activation", activation).starts_with("gelu");
  else
    shape.relu_mlp = activation == "relu";
  if (auto fused = config.find("fused_gelu")) {
    if (shape.gated_mlp)
      fused->fail("no fused_gelu: " + std::string(family.model_type) + " has a gated MLP, not a GeLU");
    if (activation != "gelu_new")
      fused->fail("no fused_gelu: the activation is " + quote(activation.empty() ? std::string("gelu") : activation) +
                  ", which PyTorch runs as one kernel (only gelu_new runs op by op)");
    shape.fused_gelu = fused->boolean();
  } else if (activation == "gelu_new") {
    shape.gelu_as_modules = true;
    assume("fused_gelu not given: gelu_new runs as the plan's framework runs the model, op by op in Hugging "
           "Face's eager modules (FSDP, DeepSpeed), as one fused kernel keeping its input in Megatron-LM's (set "
           "\"fused_gelu\" to choose)");
  }
  // "fused_norm" is our extension: a stack that runs RMSNorm as one kernel in eager PyTorch (torchtitan's
  // norm_type = "fused_rmsnorm", Apex's FusedRMSNorm).
  if (auto fused = config.find("fused_norm")) {
    if (!shape.rms_norm)
      fused->fail("no fused_norm: " + std::string(family.model_type) +
                  " uses LayerNorm, which PyTorch runs as one kernel");
    shape.fused_norm = fused->boolean();
  }
  // "capacity_factor" is our extension: how unevenly the router fills the experts.
  if (auto factor = config.find("capacity_factor"); factor && shape.experts == 0)
    factor->fail("no capacity_factor: " + std::string(family.model_type) + " has no routed experts");
  if (shape.experts > 0) {
    if (auto factor = config.find("capacity_factor")) {
      // At most every token on one expert: experts / top-k times its even share.
      const double most     = static_cast<double>(shape.experts) / shape.experts_per_token;
      shape.capacity_factor = factor->number();
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", most);
      if (!(shape.capacity_factor >= 1 && shape.capacity_factor <= most))
        factor->fail("a capacity factor from 1 (balanced routing) to " + std::string(bound) +
                     " (every token on one expert)");
    } else {
      assume("capacity_factor not given: routing taken as balanced, every expert receiving its even share of "
             "the tokens (set \"capacity_factor\", e.g. 1.25, for the busiest expert's share)");
    }
  }
  if (auto predict = config.find("num_nextn_predict_layers"); predict && predict->non_negative_int() > 0)
    assume("num_nextn_predict_layers " + std::to_string(predict->non_negative_int()) +
           ": the multi-token prediction module is not modelled (left out of the parameters and FLOPs, as in the "
           "published total without it)");
  // "seq_len" is our extension: the length trained on, often shorter than the positions the model supports.
  if (auto seq_len = config.find("seq_len")) {
    shape.seq_len = size_field(*seq_len);
    if (shape.max_positions > 0 && shape.seq_len > shape.max_positions)
      seq_len->fail("at most the " + std::to_string(shape.max_positions) + " learned positions");
  } else {
    assume("seq_len not given: training at the model's maximum of " + std::to_string(shape.seq_len) +
           " positions (give \"seq_len\" in the file, or --seq-len)");
  }
  if (auto window = config.find("sliding_window"); window && !window->value().is_null() &&
                                                   config.boolean_or("use_sliding_window", true)) {
    const int tokens = size_field(*window);
    shape.sliding_window = tokens;
    if (tokens < shape.seq_len)
      assume("sliding_window " + std::to_string(tokens) + " is shorter than seq_len " +
             std::to_string(shape.seq_len) + ": attention is modelled over the whole sequence (an overestimate)");
  }
  return model;
}

} // namespace hetsim::models
