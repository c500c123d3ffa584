#pragma once
/// What a transformer is, whatever the family it was read from: the figures a framework's model arguments name.

#include "models/attention_kernel.hpp"
#include "models/fp8.hpp"
#include "models/loss_kernel.hpp"
#include "models/selective_recompute.hpp"

#include <numeric>
#include <string>
#include <vector>

namespace hetsim::models {

/// The shape of a transformer, whatever the family it was read from.
struct TransformerShape {
  /// Width of one attention head.
  double head_width() const { return head_dim > 0 ? head_dim : static_cast<double>(hidden) / heads; }

  std::string name;
  std::string family; ///< "llama", "gpt2", "bert", "falcon", "gpt_neox", "opt" (the operators' family)
  /// The config's own model type ("qwen2", "mixtral", "gemma2", ...), or the one its `architectures` name when
  /// it gives none; empty for a shape built in code.
  std::string model_type;
  /// What a message about the model file calls its type: the config's model_type, else the family.
  const std::string& type_name() const { return model_type.empty() ? family : model_type; }
  int layers           = 0;
  int hidden           = 0;
  int heads            = 0;
  int kv_heads         = 0; ///< grouped-query attention; equals heads without it
  int head_dim         = 0; ///< width of one head when it is not hidden / heads (Gemma: 256); 0: hidden / heads
  int intermediate     = 0; ///< MLP width
  int vocab            = 0;
  int seq_len          = 0;
  int max_positions    = 0; ///< learned position embeddings (gpt2, bert, opt); 0 for rotary (llama) or ALiBi
  /// ALiBi (MPT): a per-head linear bias on the scores instead of any position embedding or rotation.
  bool alibi = false;
  /// Rotary positions: no learned table and no ALiBi.
  bool rotary() const { return max_positions == 0 && !alibi; }
  int position_offset  = 0; ///< learned position rows before the first position (OPT: 2)
  /// Rotary positions (max_positions 0): the base of their frequencies (rope_theta), the share of a head's width
  /// they turn (GPT-NeoX's rotary_pct), and the context extension the config names (rope_scaling's type,
  /// "llama3", "linear", "yarn", ...; empty for none) with its factor and YaRN's attention scales. None of these
  /// changes the cost of a step; the exports carry them.
  double rope_base           = 10000;
  double rotary_percent      = 1;
  std::string rope_scaling;
  double rope_scaling_factor = 1;
  double rope_mscale         = 1;
  double rope_mscale_all_dim = 1;
  int type_vocab       = 0; ///< bert token-type embeddings
  bool gated_mlp       = false; ///< llama SwiGLU: three projections instead of two
  /// The gated MLP's gate is a GeLU (Gemma's GeGLU, `hidden_activation` gelu*) rather than a SiLU: the same
  /// products and elementwise work, so the cost model does not tell them apart; the exports do.
  bool gelu_gate       = false;
  /// The (ungated) MLP's activation is a ReLU (OPT) rather than a GeLU: again the same cost, another model.
  bool relu_mlp        = false;
  /// Attention and MLP read the same block input and both add to it (GPT-NeoX's use_parallel_residual, Falcon's
  /// parallel_attn): the same work as in sequence, another model.
  bool parallel_residual = false;
  bool biases          = true;
  bool qkv_bias        = false; ///< biases on the query, key and value projections even without `biases` (Qwen2)
  /// Biases on the attention's output projection even without `biases` (Llama's attention_bias).
  bool attention_output_bias = false;
  bool mlp_bias        = false; ///< biases on the MLP's projections even without `biases` (GPT-J, Llama's mlp_bias)
  bool logits_bias     = false; ///< a bias per vocabulary entry on the output projection (GPT-J, Phi)
  bool tied_embeddings = true;  ///< output projection shares the input embedding
  bool rms_norm        = false; ///< llama RMSNorm: a scale and no bias
  bool norm_biases     = true;  ///< a LayerNorm has a bias beside its scale (MPT's no_bias drops both kinds)
  bool post_norm       = false; ///< bert: norms after each sublayer and on the embeddings, none before the output
  bool embedding_norm  = false; ///< a LayerNorm on the embeddings' output in a pre-norm model (BLOOM)
  /// Falcon-7B: attention and MLP run in parallel on one shared norm's output (one norm per block, not two).
  bool shared_block_norm = false;
  /// Gemma-2: each sublayer's output is normalised too before its residual add (four norms per block).
  bool sandwich_norms = false;
  /// Qwen3, Qwen3-MoE, Gemma 3: an RMSNorm over each head's queries and keys (q_norm, k_norm, of head_dim each)
  /// before the rotary embedding.
  bool qk_norm = false;
  /// OLMo 2: those norms span all heads' queries (and keys) at once, a scale as wide as the projection.
  bool qk_norm_whole_width = false;
  /// gpt-oss: a learned logit per head joins each row of scores before the softmax and is dropped after it
  /// (GptOssAttention's sinks), so a row's weights may sum to less than one.
  bool attention_sinks = false;
  bool pooler          = false; ///< bert: dense + tanh on the first token
  bool flash_attention = false; ///< fused attention keeps no seq x seq score matrices for backward
  /// The fused attention kernel the file names ("attention"); framework_default: the framework's (SDPA under
  /// Hugging Face modules, Transformer Engine's under Megatron-LM's). Which one a GPU runs: costmodel/attention_speed.
  AttentionKernel attention = AttentionKernel::framework_default;
  /// The loss kernel the file names ("loss"); framework_default: eager under Hugging Face modules, megatron
  /// under Megatron-LM's.
  LossKernel loss = LossKernel::framework_default;
  /// Tokens a sliding-window attention sees (Mistral's and Qwen2's sliding_window); 0: the whole causal prefix.
  int sliding_window = 0;
  /// The MLP's GeLU is one fused kernel that keeps its input (Megatron-LM's bias-GeLU); otherwise the tanh
  /// approximation's eight elementwise operations run one by one (Hugging Face's gelu_new in eager PyTorch).
  bool fused_gelu = true;
  /// RMSNorm runs as one fused kernel keeping its 16-bit input (Apex's, or a Triton kernel as torchtitan's
  /// fused_rmsnorm), even in eager PyTorch; otherwise eager modules run Hugging Face's expression op by op.
  /// Megatron-LM's modules always fuse it.
  bool fused_norm = false;
  /// The config's activation is gelu_new and it did not say `fused_gelu`: the model runs the GeLU as its
  /// framework's modules do, op by op when `eager`, fused otherwise.
  bool gelu_as_modules = false;
  /// The model runs as its Hugging Face modules in eager PyTorch (strategies::FrameworkSettings::eager_modules):
  /// every operator launches the kernels its PyTorch expression does, keeps what autograd saves for them, and
  /// the vocabulary is the config's (Megatron-LM pads it to a multiple of 128; an unaligned width runs on
  /// cuBLAS' slow path). Otherwise Megatron-LM's fused kernels.
  bool eager = false;
  /// Under torch.autocast with fp32 weights (needs `eager`): the embeddings, residual stream and norms are
  /// fp32, products cast their inputs to 16-bit (each caller its own copy), and autocast's fp32 operations
  /// (pow, so all of gelu_new; log_softmax) run and keep fp32.
  bool autocast = false;
  /// What a block keeps under selective recompute and reruns (the plan's framework's policy).
  SelectivePolicy selective = SelectivePolicy::core_attention;
  /// The blocks' linear products in fp8 under this recipe (the plan's dtype "fp8", models/fp8.hpp); none: 16-bit.
  Fp8Recipe fp8 = Fp8Recipe::none;
  /// Each block as two layers, "block.i.attention" (with the first norm) and "block.i.mlp" (with the second),
  /// so that per-layer decisions (OSDP's sharding) reach the operators inside a block.
  bool split_blocks = false;

  // Mixture of experts (Mixtral, Qwen2-MoE): the MLP of a sparse block is a router and `experts` MLPs of width
  // expert_intermediate, of which each token visits experts_per_token; a shared expert may run on every token.
  int experts                    = 0; ///< routed experts per sparse block; 0: a dense model
  int experts_per_token          = 0; ///< top-k
  int expert_intermediate        = 0; ///< each routed expert's MLP width
  int shared_expert_intermediate = 0; ///< the shared expert's MLP width (Qwen2-MoE); 0: none
  bool shared_expert_gate        = false; ///< a sigmoid gate (hidden -> 1) scales the shared expert's output
  int sparse_step                = 1; ///< block i is sparse when (i + 1) % sparse_step == 0 (decoder_sparse_step)
  /// Expert slots per routed token on the busiest expert: 1 is perfectly balanced routing; Switch/GShard's
  /// capacity factor (1.25, ...) pads every expert to that many.
  double capacity_factor = 1.0;

  int first_dense_blocks = 0; ///< blocks before the first sparse one (DeepSeek's first_k_dense_replace)
  bool router_bias       = false; ///< the router's per-expert score bias (DeepSeek-V3's e_score_correction_bias)
  /// Biases on the router's projection and on each routed expert's projections (gpt-oss: GptOssTopKRouter's
  /// bias, GptOssExperts' gate_up_proj_bias and down_proj_bias).
  bool expert_biases     = false;
  // How the router picks experts (DeepSeek-V3: sigmoid scores, top-4 of 8 groups, weights scaled by 2.5). They
  // change which experts a token visits, not the work: the cost model reads none of them; the exports write them.
  bool sigmoid_router      = false; ///< sigmoid scores (scoring_func "sigmoid"); otherwise softmax
  /// Softmax over every expert before the top-k, whose weights are not renormalised (norm_topk_prob false:
  /// DeepSeek-V2, Qwen2-MoE); otherwise the top-k's own softmax (Mixtral), which is the same as renormalising.
  bool router_pre_softmax  = false;
  int router_groups        = 0;     ///< experts in this many groups, tokens routed within the best (n_group)
  int router_group_topk    = 0;     ///< groups each token may use (topk_group)
  double router_topk_scale = 0;     ///< routing weights scaled by this (routed_scaling_factor); 0: none

  // Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0: ordinary attention.
  int q_lora_rank      = 0; ///< 0: queries projected directly from the hidden state
  int kv_lora_rank     = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim       = 0;

  bool mixture_of_experts() const { return experts > 0; }
  bool sparse_block(int index) const
  {
    return experts > 0 && index >= first_dense_blocks && (index + 1) % sparse_step == 0;
  }
  bool latent_attention() const { return kv_lora_rank > 0; }
  /// The largest tensor-parallel degree Megatron-LM splits this transformer by: each rank gets whole attention
  /// heads and key-value groups and an equal slice of every MLP width (its `divide` asserts as much); every
  /// divisor of it splits evenly too.
  int tensor_parallel_limit() const
  {
    int limit = 0;
    for (const SplitWidth& split : tensor_parallel_splits())
      limit = std::gcd(limit, split.count);
    return limit;
  }
  /// What tensor parallelism splits, by name ("attention heads", "key-value groups", "MLP columns", ...): the
  /// counts tensor_parallel_limit divides.
  struct SplitWidth {
    const char* what;
    int count;
  };
  std::vector<SplitWidth> tensor_parallel_splits() const
  {
    std::vector<SplitWidth> splits{{"attention heads", heads}, {"key-value groups", kv_heads}};
    for (const SplitWidth& mlp : {SplitWidth{"MLP columns", has_dense_block() ? intermediate : 0},
                                  SplitWidth{"expert MLP columns", expert_intermediate},
                                  SplitWidth{"shared-expert MLP columns", shared_expert_intermediate}})
      if (mlp.count > 0)
        splits.push_back(mlp);
    return splits;
  }
  /// Whether some block has a dense MLP (of width `intermediate`).
  bool has_dense_block() const
  {
    for (int i = 0; i < layers; ++i)
      if (!sparse_block(i))
        return true;
    return false;
  }
};

} // namespace hetsim::models
