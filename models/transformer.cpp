#include "models/transformer.hpp"

#include "core/error.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace hetsim::models {

// Hugging Face's families whose blocks apply dropout in training (resid_pdrop, embd_pdrop, attn_pdrop; OPT's
// dropout).
bool trains_with_dropout(const TransformerShape& shape)
{
  return shape.family == "gpt2" || shape.family == "bert" || shape.family == "opt";
}

namespace {

// Every figure is per sample (one sequence) in doubles: seq^2 * heads overflows int for long sequences.
/// q and kv: widths of the queries (heads x head width, the hidden size unless head_dim says otherwise) and of
/// the keys or the values.
struct Dims {
  double s, h, a, q, kv, ffn, v;
};

Dims dims_of(const TransformerShape& shape)
{
  const double head = shape.head_width();
  return Dims{static_cast<double>(shape.seq_len),      static_cast<double>(shape.hidden),
              static_cast<double>(shape.heads),        head * shape.heads,
              head * shape.kv_heads,                   static_cast<double>(shape.intermediate),
              static_cast<double>(shape.vocab)};
}

double norm_params(const TransformerShape& shape)
{
  return shape.rms_norm || !shape.norm_biases ? shape.hidden : 2.0 * shape.hidden;
}

Operator linear(std::string name, TensorSplit split, double rows, double out, double in, bool bias)
{
  Operator op;
  op.name   = std::move(name);
  op.kind   = OperatorKind::linear;
  op.split  = split;
  op.m      = rows;
  op.n      = out;
  op.k      = in;
  op.params  = out * in + (bias ? out : 0);
  op.tensors = bias ? 2 : 1;
  return op;
}

Operator memory_bound(std::string name, TensorSplit split, double bytes, double tensor, double saved,
                      double params = 0)
{
  Operator op;
  op.name                    = std::move(name);
  op.split                   = split;
  op.bytes_per_sample        = bytes;
  op.tensor_bytes_per_sample = tensor;
  op.saved_bytes_per_sample = saved;
  op.params                 = params;
  op.tensors                = params > 0 ? 1 : 0;
  return op;
}

/// Bytes of one element of the residual stream, the embeddings' and the norms' outputs: fp32 under autocast
/// with fp32 weights, the model's 16-bit otherwise.
double stream_bytes(const TransformerShape& shape)
{
  return shape.autocast ? 4 : 2;
}

/// A product as eager PyTorch runs `modules` nn.Linear (or GPT-2 Conv1D) calls of it (q, k and v separately in
/// most families): a GEMM each, two backward and a bias reduction. Under autocast each call casts its weights
/// (cached for the pass) and, when its input is fp32 (`fp32_input`: a norm's output, GeLU's), its own copy of
/// the input to 16-bit, and keeps that copy for backward; backward casts the gradients back to fp32.
void make_eager_linear(Operator& op, const TransformerShape& shape, double modules, bool fp32_input)
{
  if (!shape.eager)
    return;
  const bool bias        = op.tensors > 1;
  const bool casts_input = shape.autocast && fp32_input;
  const double weight_casts = shape.autocast ? modules * (bias ? 2 : 1) : 0;
  op.launches_forward  = modules + weight_casts + (casts_input ? modules : 0);
  op.launches_backward = modules * (bias ? 3 : 2) + weight_casts + (casts_input ? modules : 0);
  if (casts_input) {
    op.cast_bytes_per_sample  = modules * 6 * op.m * op.k; // fp32 read, 16-bit written
    op.saved_bytes_per_sample = modules * 2 * op.m * op.k; // each call's own 16-bit copy
  }
  // q, k and v read one input: backward sums their three input gradients, fp32 where each cast it.
  op.gradient_sum_bytes_per_sample = (modules - 1) * 3 * (casts_input ? 4 : 2) * op.m * op.k;
  if (shape.autocast)
    op.cast_fixed_bytes = 6 * op.n * op.k * std::max(1.0, op.experts); // weights, fp32 read, 16-bit written
}

/// A memory-bound operator as eager PyTorch's expression of it launches (1 forward and 2 backward, a norm's
/// input gradient and weight gradient, unless said).
void make_eager(Operator& op, const TransformerShape& shape, double forward, double backward)
{
  if (!shape.eager)
    return;
  op.launches_forward  = forward;
  op.launches_backward = backward;
}

/// Whether the GeLU runs as gelu_new's expression, op by op: said so, or left to eager modules.
bool gelu_op_by_op(const TransformerShape& shape)
{
  return !shape.fused_gelu || (shape.eager && shape.gelu_as_modules);
}

/// A GeLU over `elements` 16-bit values per sample. Megatron's fused bias-GeLU reads and writes them once and
/// keeps its input; eager PyTorch runs 0.5x(1 + tanh(c(x + 0.044715x^3))) op by op (Hugging Face's gelu_new):
/// 8 kernels, 10 reads and 8 writes, and autograd keeps x, the tanh, 0.5x and 1 + tanh.
/// Under autocast, pow is one of its fp32 operations: x is cast up and the whole expression runs in fp32 (10
/// kernels: 70 bytes per element read and written, keeping fp32 x, tanh and 1 + tanh and 16-bit 0.5x, 14 bytes),
/// and its fp32 output is what the next product casts back (H100 trace: 10 forward and 15 backward kernels,
/// 208 bytes per element over both passes).
Operator gelu(std::string name, const TransformerShape& shape, double elements)
{
  if (!gelu_op_by_op(shape)) {
    Operator op = memory_bound(std::move(name), TensorSplit::heads, 4 * elements, 2 * elements, 2 * elements);
    make_eager(op, shape, 1, 1);
    return op;
  }
  Operator op = shape.autocast ? memory_bound(std::move(name), TensorSplit::heads, 70 * elements, 4 * elements, 14 * elements)
                               : memory_bound(std::move(name), TensorSplit::heads, 36 * elements, 2 * elements, 8 * elements);
  make_eager(op, shape, shape.autocast ? 10 : 8, 15);
  if (shape.eager && shape.autocast) {
    // Of the 70 bytes: x cast up for pow (6), x + 0.044715x^3 and 0.5x(1 + tanh) each mixing the 16-bit x or 0.5x
    // with fp32 (10 each) run unvectorized (the H100 GPT-2 traces' mixed-dtype mul and add); the rest is fp32.
    op.unvectorized_share_forward = op.unvectorized_share_backward = 26.0 / 70;
  }
  return op;
}

/// Hugging Face's RMSNorm as eager PyTorch runs it, `norms` of them over `elements` values per sample: an
/// expression, x.float(), pow, mean, rsqrt, two products and the cast back (6 kernels on an fp32 input, 8 on a
/// 16-bit one, about 10 backward), keeping the fp32 input and the normalised fp32 value (8 bytes per element;
/// 4 + 2 from a 16-bit input). x * rsqrt(mean) broadcasts a value per token over the row and weight * x a row
/// over the tokens (8 + 8 of the 28 bytes from fp32); from 16 bits also the cast up (6 + 8 + 4 of 36): those
/// run unvectorized. Backward repeats the broadcast products and sums the two gradients of the fp32 x (pow and
/// the product both read it).
void make_eager_rms_norm(Operator& op, const TransformerShape& shape, bool fp32_input, double elements,
                         double norms = 1)
{
  op.bytes_per_sample              = (fp32_input ? 28 : 36) * elements;
  op.saved_bytes_per_sample        = (fp32_input ? 8 : 6) * elements;
  op.gradient_sum_bytes_per_sample = 12 * elements;
  op.unvectorized_share_forward = op.unvectorized_share_backward = fp32_input ? 16.0 / 28 : 18.0 / 36;
  make_eager(op, shape, norms * (fp32_input ? 6 : 8), norms * 10);
}

/// A norm reads and writes its input (fused, Apex/Megatron, or an RMSNorm the model file says is fused) and keeps
/// the input for backward (its per-token statistics left out, as a LayerNorm's).
/// Eager PyTorch: LayerNorm is one kernel (fp32 under autocast, on the fp32 stream); RMSNorm is Hugging Face's
/// expression (make_eager_rms_norm), on the fp32 stream under autocast.
Operator norm(std::string name, const TransformerShape& shape, bool with_params = true)
{
  const Dims d   = dims_of(shape);
  const double r = stream_bytes(shape);
  Operator op    = memory_bound(std::move(name), TensorSplit::replicated, 2 * r * d.s * d.h, r * d.s * d.h, r * d.s * d.h,
                                with_params ? norm_params(shape) : 0);
  // A scale, and a bias unless RMSNorm or a bias-free LayerNorm.
  op.tensors     = with_params ? (shape.rms_norm || !shape.norm_biases ? 1 : 2) : 0;
  if (shape.eager && shape.rms_norm && !shape.fused_norm)
    make_eager_rms_norm(op, shape, shape.autocast, d.s * d.h);
  else
    make_eager(op, shape, 1, 2);
  return op;
}

/// Qwen3's q_norm and k_norm: RMSNorm over each head of the 16-bit queries and keys, `width` of them per token,
/// each norm a scale of one head's width (OLMo 2's: of all heads). Eager PyTorch runs both as Hugging Face's
/// RMSNorm expression on a 16-bit input (make_eager_rms_norm); fused, each reads and writes once.
Operator qk_norm(const TransformerShape& shape, double width)
{
  const Dims d = dims_of(shape);
  Operator op  = memory_bound("qk_norm", TensorSplit::heads, 4 * d.s * width, 2 * d.s * width, 2 * d.s * width,
                              shape.qk_norm_whole_width ? width : 2 * shape.head_width());
  op.tensors   = 2;
  if (shape.eager && !shape.fused_norm)
    make_eager_rms_norm(op, shape, false, d.s * width, 2);
  else
    make_eager(op, shape, 2, 4);
  return op;
}

/// Megatron's fused bias-dropout-add after a row-parallel projection: reads the output, bias and residual,
/// writes the sum and a one-byte mask, which it keeps.
/// Eager PyTorch: a dropout where the family trains with one (its 1-byte mask kept), then the add onto the
/// stream, 16-bit output onto fp32 under autocast; backward reduces the two branches' gradients and casts one.
Operator dropout_add(std::string name, const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  const bool dropout = trains_with_dropout(shape);
  if (!shape.eager) // Megatron-LM's fused bias-dropout-add keeps a one-byte mask, and no mask at p = 0
    return memory_bound(std::move(name), TensorSplit::replicated, (dropout ? 7 : 6) * d.s * d.h, 2 * d.s * d.h,
                        dropout ? d.s * d.h : 0);
  const double r = stream_bytes(shape);
  Operator op          = memory_bound(std::move(name), TensorSplit::replicated,
                                      (dropout ? 5 : 0) * d.s * d.h + (2 + 2 * r) * d.s * d.h, r * d.s * d.h,
                                      dropout ? d.s * d.h : 0);
  make_eager(op, shape, dropout ? 2 : 1, dropout ? 3 : 2);
  // Under autocast the 16-bit branch adds onto the fp32 stream: mixed dtypes, unvectorized (2 + 2r of the
  // bytes). Its gradient casts down, vectorized.
  if (shape.autocast)
    op.unvectorized_share_forward = (2 + 2 * r) / ((dropout ? 5 : 0) + 2 + 2 * r);
  return op;
}

/// The saved bytes follow Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
/// (2022), eq. 1 (sbh(34 + 5as/h) per block, 16-bit), with the widths each tensor really has:
///  - attention 11sh + 5as^2: QKV input 2sh, Q 2sh, K and V 2s*kv each (kv < h under grouped-query attention),
///    softmax output 2as^2, its dropout mask as^2 and output 2as^2, output-projection input 2sh, dropout mask sh;
///    flash attention keeps Q, K, V and a fp32 log-sum-exp per head and token instead of the s x s matrices;
///  - MLP 19sh for a 4h GeLU MLP: input 2sh, dropout mask sh, and 2s*ffn for each ffn-wide tensor kept (GeLU
///    input and output); a gated (SwiGLU) MLP keeps four under eager PyTorch (gate output, SiLU output, up
///    output, their product) and three under Megatron-LM's fused SwiGLU (no SiLU output);
///  - the two norms' inputs, 4sh.
/// The residual and embedding dropouts keep masks only in the families that train with dropout
/// (trains_with_dropout); an unfused attention's dropout mask (in 5as^2) is counted for every family.
/// Widths of one attention's tensors per token: queries and keys of `qk` per head, values of `v` per head, the
/// keys and values over `kv_heads` heads (grouped-query attention shares them).
struct AttentionWidths {
  double qk, v, kv_heads;
};

/// Scores, softmax, dropout and context per head (or one flash-attention kernel), then the context transpose:
/// what lies between the projections into Q, K, V and the output projection.
void append_attention_core(std::vector<Operator>& ops, const TransformerShape& shape, AttentionWidths w)
{
  const Dims d   = dims_of(shape);
  const double q = d.a * w.qk, k = w.kv_heads * w.qk, v = w.kv_heads * w.v, context_width = d.a * w.v;
  if (shape.flash_attention) {
    Operator fused;
    fused.name                   = "flash_attention";
    fused.kind                   = OperatorKind::fused_attention;
    fused.split                  = TensorSplit::heads;
    fused.count                  = d.a;
    fused.m                      = d.s; // its shape, for the executors; FLOPs are fixed_flops_per_sample
    fused.n                      = d.s;
    fused.k                      = w.qk;
    fused.fixed_flops_per_sample = 2 * d.s * d.s * q + 2 * d.s * d.s * context_width;
    // Reads Q, K, V; writes the context and the fp32 log-sum-exp.
    fused.bytes_per_sample       = 2 * d.s * (q + k + v + context_width) + 4 * d.a * d.s;
    fused.saved_bytes_per_sample = 2 * d.s * (q + k + v) + 4 * d.a * d.s;
    fused.key_value_bytes_per_sample = 2 * d.s * (k + v);
    if (shape.attention_sinks) { // FlashAttention 3 takes the sinks as an input; they cost it nothing more
      fused.params  = d.a;
      fused.tensors = 1;
    }
    // Unnamed, the framework's: SDPA under Hugging Face modules (their attn_implementation default since
    // transformers 4.36), Transformer Engine's under Megatron-LM (--transformer-impl transformer_engine).
    fused.attention = shape.attention != AttentionKernel::framework_default ? shape.attention
                      : shape.eager                                         ? AttentionKernel::sdpa
                                                                            : AttentionKernel::te_fused;
    // Hugging Face builds an explicit mask once the window is shorter than the sequence
    // (AttentionMaskConverter._ignore_causal_mask_sdpa keeps is_causal only while key_value_length <
    // sliding_window), and a mask rules out the causal-only kernels.
    fused.explicit_mask = shape.sliding_window > 0 && shape.sliding_window <= shape.seq_len;
    if (shape.eager) {
      // PyTorch's SDPA keeps its output too, which its backward reads; under autocast the queries and keys a
      // rotary embedding made fp32 (its cos and sin follow the fp32 stream) are cast to 16-bit first.
      const bool casts = shape.autocast && shape.rotary();
      fused.saved_bytes_per_sample += 2 * d.s * context_width;
      make_eager(fused, shape, 1 + (casts ? 2 : 0), 2 + (casts ? 2 : 0));
      if (casts)
        fused.cast_bytes_per_sample = 6 * d.s * (q + k);
    }
    ops.push_back(fused);
  } else {
    Operator scores = {};
    scores.name                   = "attention_scores"; // Q K^T per head
    scores.kind                   = OperatorKind::batched_matmul;
    scores.split                  = TensorSplit::heads;
    scores.m                      = d.s;
    scores.n                      = d.s;
    scores.k                      = w.qk;
    scores.count                  = d.a;
    scores.saved_bytes_per_sample = 2 * d.s * q + 2 * d.s * k; // Q and K
    // Backward holds the gradients of the softmax output and of the scores at once.
    scores.transient_bytes_per_sample = 4 * d.a * d.s * d.s;
    // Selective recompute reruns scores, softmax, dropout and context from Q, K, V: the 5as^2 term goes.
    scores.selectively_recomputed           = true;
    scores.selective_saved_bytes_per_sample = scores.saved_bytes_per_sample;
    ops.push_back(scores);
    // Megatron's fused scale-mask-softmax reads and writes the scores once and keeps its output.
    Operator softmax = memory_bound("softmax", TensorSplit::heads, 4 * d.a * d.s * d.s, 2 * d.a * d.s * d.s,
                                     2 * d.a * d.s * d.s);
    softmax.selectively_recomputed = true;
    if (shape.alibi && shape.eager && shape.family == "mpt") {
      // Hugging Face's MptAttention adds the ALiBi bias to the scores, one more pass over them (BloomAttention
      // folds it into the product: baddbmm).
      Operator bias = memory_bound("alibi_bias", TensorSplit::heads, 4 * d.a * d.s * d.s, 2 * d.a * d.s * d.s, 0);
      bias.selectively_recomputed = true;
      ops.push_back(bias);
    }
    if (shape.attention_sinks) {
      // Hugging Face's eager gpt-oss attention: the causal mask added, the sinks concatenated as one more
      // column, the row maximum read and subtracted before the softmax: 14 bytes per 16-bit score.
      Operator sinks = memory_bound("attention_sinks", TensorSplit::heads, 14 * d.a * d.s * d.s,
                                    2 * d.a * d.s * d.s, 0, d.a);
      make_eager(sinks, shape, 4, 4);
      sinks.selectively_recomputed = true;
      ops.push_back(sinks);
    }
    ops.push_back(softmax);
    Operator dropout = memory_bound("attention_dropout", TensorSplit::heads, 5 * d.a * d.s * d.s, 2 * d.a * d.s * d.s,
                                     d.a * d.s * d.s);
    dropout.selectively_recomputed = true; // its mask regenerated from the saved random state
    ops.push_back(dropout);
    Operator context = scores;
    context.name     = "attention_context"; // probabilities times V per head
    context.n        = w.v;
    context.k        = d.s;
    context.saved_bytes_per_sample           = 2 * d.a * d.s * d.s + 2 * d.s * v; // dropout output and V
    context.selective_saved_bytes_per_sample = 2 * d.s * v;
    ops.push_back(context);
  }
  // [s, b, heads, head] -> [s, b, heads x head] before the output projection.
  Operator transpose = memory_bound("context_transpose", TensorSplit::heads, 4 * d.s * context_width,
                                                2 * d.s * context_width, 0);
  make_eager(transpose, shape, 1, 1);
  ops.push_back(transpose);
}

/// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank q_lora_rank projection with its own
/// norm (or one hidden -> heads x (nope + rope) projection without q_lora_rank), keys and values through one
/// shared kv_lora_rank latent with its norm plus a rope part shared by all heads, then heads x (nope + rope) keys
/// and heads x v_head_dim values. The down projections are replicated over a tensor-parallel group (Megatron-
/// Core's MLA), the up projections column-parallel.
std::vector<Operator> latent_attention_operators(const TransformerShape& shape)
{
  const Dims d       = dims_of(shape);
  const double qk    = shape.qk_nope_head_dim + shape.qk_rope_head_dim;
  const double heads = d.a;
  std::vector<Operator> ops;
  if (shape.q_lora_rank > 0) {
    Operator down = linear("q_down", TensorSplit::replicated, d.s, shape.q_lora_rank, d.h, shape.biases);
    down.saved_bytes_per_sample = 2 * d.s * d.h; // the input, shared with the key-value down projection
    ops.push_back(down);
    Operator norm = memory_bound("q_norm", TensorSplit::replicated, 4 * d.s * shape.q_lora_rank,
                                 2 * d.s * shape.q_lora_rank, 2 * d.s * shape.q_lora_rank, shape.q_lora_rank);
    ops.push_back(norm);
    Operator up = linear("q_up", TensorSplit::columns, d.s, heads * qk, shape.q_lora_rank, false);
    up.saved_bytes_per_sample = 2 * d.s * shape.q_lora_rank;
    ops.push_back(up);
  } else {
    Operator q = linear("q", TensorSplit::columns, d.s, heads * qk, d.h, shape.biases);
    q.saved_bytes_per_sample = 2 * d.s * d.h;
    ops.push_back(q);
  }
  ops.push_back(linear("kv_down", TensorSplit::replicated, d.s, shape.kv_lora_rank + shape.qk_rope_head_dim, d.h,
                       shape.biases));
  ops.push_back(memory_bound("kv_norm", TensorSplit::replicated, 4 * d.s * shape.kv_lora_rank,
                             2 * d.s * shape.kv_lora_rank, 2 * d.s * shape.kv_lora_rank, shape.kv_lora_rank));
  Operator up = linear("kv_up", TensorSplit::columns, d.s, heads * (shape.qk_nope_head_dim + shape.v_head_dim),
                       shape.kv_lora_rank, false);
  up.saved_bytes_per_sample = 2 * d.s * shape.kv_lora_rank;
  ops.push_back(up);
  // Rotates the rope parts of the queries and of the shared key.
  ops.push_back(memory_bound("rotary", TensorSplit::heads,
                             4 * d.s * (heads * shape.qk_rope_head_dim + shape.qk_rope_head_dim),
                             2 * d.s * (heads * shape.qk_rope_head_dim + shape.qk_rope_head_dim), 0));
  append_attention_core(ops, shape, AttentionWidths{qk, static_cast<double>(shape.v_head_dim), heads});
  Operator out = linear("attention_output", TensorSplit::rows, d.s, d.h, heads * shape.v_head_dim, shape.biases);
  out.saved_bytes_per_sample = 2 * d.s * heads * shape.v_head_dim;
  ops.push_back(out);
  ops.push_back(dropout_add("attention_dropout_add", shape));
  return ops;
}

std::vector<Operator> attention_operators(const TransformerShape& shape)
{
  if (shape.latent_attention())
    return latent_attention_operators(shape);
  const Dims d        = dims_of(shape);
  const double head   = d.q / d.a;
  const bool rotary   = shape.rotary();
  std::vector<Operator> ops;
  Operator qkv = linear("qkv", TensorSplit::columns, d.s, d.q + 2 * d.kv, d.h, shape.biases || shape.qkv_bias);
  qkv.saved_bytes_per_sample = 2 * d.s * d.h;
  // GPT-2's c_attn and GPT-NeoX's and Falcon's query_key_value are one module; the others call q, k and v apart.
  const bool one_module =
      shape.family == "gpt2" || shape.family == "gpt_neox" || shape.family == "falcon" || shape.family == "mpt" ||
      shape.family == "bloom";
  make_eager_linear(qkv, shape, one_module ? 1 : 3, true);
  if (shape.eager && !one_module)
    qkv.call_widths = {d.q, d.kv, d.kv};
  ops.push_back(qkv);
  if (shape.qk_norm)
    ops.push_back(qk_norm(shape, d.q + d.kv));
  if (rotary) { // rotates Q and K in place
    Operator rotate = memory_bound("rotary", TensorSplit::heads, 4 * d.s * (d.q + d.kv),
                                   stream_bytes(shape) * d.s * (d.q + d.kv), 0);
    // Hugging Face's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin (neg, cat, two products, a sum) on
    // the queries and the keys, in fp32 under autocast (cos and sin follow the fp32 stream).
    // x * cos and rotate_half(x) * sin broadcast cos and sin over the heads (and mix a 16-bit x with fp32 ones
    // under autocast), and rotate_half's neg reads a strided half: 16 of the 32 bytes (10 of 18 on 16 bits).
    if (shape.eager) {
      rotate.bytes_per_sample       = (shape.autocast ? 32 : 18) * d.s * (d.q + d.kv);
      rotate.unvectorized_share_forward = rotate.unvectorized_share_backward = shape.autocast ? 16.0 / 32 : 10.0 / 18;
      rotate.gradient_sum_bytes_per_sample = 6 * d.s * (d.q + d.kv); // x * cos and rotate_half(x) read the 16-bit x
    }
    make_eager(rotate, shape, 10, 12);
    ops.push_back(rotate);
  }
  append_attention_core(ops, shape, AttentionWidths{head, head, static_cast<double>(shape.kv_heads)});
  Operator out = linear("attention_output", TensorSplit::rows, d.s, d.h, d.q,
                        shape.biases || shape.attention_output_bias);
  out.saved_bytes_per_sample = 2 * d.s * d.q;
  make_eager_linear(out, shape, 1, false);
  ops.push_back(out);
  ops.push_back(dropout_add("attention_dropout_add", shape));
  return ops;
}

/// An MLP of `width` whose operators are named after `prefix` ("mlp", "shared_expert"), without the dropout-add
/// that closes the block's MLP half.
std::vector<Operator> feed_forward(const TransformerShape& shape, double width, const std::string& prefix)
{
  const Dims d = dims_of(shape);
  std::vector<Operator> ops;
  const std::string activation = prefix == "mlp" ? "" : prefix + "_";
  if (shape.gated_mlp) {
    Operator gate = linear(prefix + "_gate", TensorSplit::columns, d.s, width, d.h, shape.biases || shape.mlp_bias);
    gate.saved_bytes_per_sample = 2 * d.s * d.h; // the input, shared with the up projection
    make_eager_linear(gate, shape, 1, true);
    ops.push_back(gate);
    Operator up = linear(prefix + "_up", TensorSplit::columns, d.s, width, d.h, shape.biases || shape.mlp_bias);
    make_eager_linear(up, shape, 1, true); // under autocast, a copy of its own
    if (shape.eager) // the gate's and its input gradients summed, fp32 where each cast its own copy
      up.gradient_sum_bytes_per_sample = 3 * (shape.autocast ? 4 : 2) * d.s * d.h;
    ops.push_back(up);
    // SiLU(gate) * up: reads both, writes the product. Eager PyTorch runs the SiLU and the product apart (10 bytes
    // per element) and autograd keeps the gate output, the SiLU output and the up output; Megatron-LM's fused
    // SwiGLUFunction keeps its input alone, the gate and up outputs, and reruns the SiLU in its backward
    // (megatron/core/fusions/fused_bias_swiglu.py:216-235 at d98e8a6).
    Operator swiglu = memory_bound(activation + "swiglu", TensorSplit::heads, (shape.eager ? 10 : 6) * d.s * width,
                                   2 * d.s * width, (shape.eager ? 6 : 4) * d.s * width);
    make_eager(swiglu, shape, 2, 4);
    ops.push_back(swiglu);
  } else {
    Operator up = linear(prefix + "_up", TensorSplit::columns, d.s, width, d.h, shape.biases || shape.mlp_bias);
    up.saved_bytes_per_sample = 2 * d.s * d.h;
    make_eager_linear(up, shape, 1, true);
    ops.push_back(up);
    ops.push_back(gelu(activation + "gelu", shape, d.s * width));
  }
  Operator down = linear(prefix + "_down", TensorSplit::rows, d.s, d.h, width, shape.biases || shape.mlp_bias);
  down.saved_bytes_per_sample = 2 * d.s * width;
  // Under autocast the op-by-op gelu_new's output is fp32: the projection casts it.
  make_eager_linear(down, shape, 1, !shape.gated_mlp && gelu_op_by_op(shape));
  ops.push_back(down);
  return ops;
}

/// One of the routed experts' projections, for all experts at once: `rows` tokens per expert and sample.
Operator expert_linear(std::string name, TensorSplit split, const TransformerShape& shape, double rows, double out,
                       double in)
{
  Operator op = linear(std::move(name), split, rows, out, in, shape.expert_biases);
  op.experts  = shape.experts;
  op.params   = shape.experts * (out * in + (shape.expert_biases ? out : 0));
  op.tensors  = shape.experts * (shape.expert_biases ? 2 : 1);
  return op;
}

/// A sparse block's MLP as Megatron-Core's MoE layer runs it with the all-to-all token dispatcher: the router
/// (a hidden -> experts projection, fp32 softmax and top-k), the shared expert on every token (Qwen2-MoE), each
/// token copied to the experts it visits and sent to the devices that hold them (all-to-all), the experts as
/// grouped products over the tokens each receives, the outputs sent back (all-to-all) and summed with the
/// router's weights. Routing is taken as balanced: every expert gets tokens x top-k x capacity_factor / experts
/// rows, so the busiest one sets the pace.
std::vector<Operator> moe_operators(const TransformerShape& shape)
{
  const Dims d        = dims_of(shape);
  const double e      = shape.experts;
  const double slots  = d.s * shape.experts_per_token * shape.capacity_factor; // routed token copies per sample
  const double rows   = slots / e;
  const double width  = shape.expert_intermediate;
  std::vector<Operator> ops;
  Operator router = linear("router", TensorSplit::replicated, d.s, e, d.h, shape.expert_biases);
  if (shape.router_bias) { // a per-expert bias on the scores that picks the experts (DeepSeek-V3)
    router.params += e;
    router.tensors = 2;
  }
  router.saved_bytes_per_sample = 2 * d.s * d.h; // the input, which the dispatch reads too
  ops.push_back(router);
  // Reads the 16-bit logits, writes and keeps fp32 probabilities.
  ops.push_back(memory_bound("router_topk", TensorSplit::replicated, 6 * d.s * e, 4 * d.s * e, 4 * d.s * e));
  if (shape.shared_expert_intermediate > 0) {
    for (Operator& op : feed_forward(shape, shape.shared_expert_intermediate, "shared_expert"))
      ops.push_back(std::move(op));
    if (shape.shared_expert_gate)
      ops.push_back(linear("shared_expert_sigmoid_gate", TensorSplit::replicated, d.s, 1, d.h, false));
  }
  // Copies each token once per expert it visits, grouped by expert; keeps the int64 expert indices.
  Operator dispatch = memory_bound("token_dispatch", TensorSplit::replicated, 2 * d.s * d.h + 2 * slots * d.h,
                                   2 * slots * d.h, 8 * d.s * shape.experts_per_token);
  dispatch.all_to_all_bytes_per_sample = 2 * slots * d.h;
  ops.push_back(dispatch);
  Operator gate = expert_linear(shape.gated_mlp ? "expert_gate" : "expert_up", TensorSplit::columns, shape, rows,
                                width, d.h);
  gate.saved_bytes_per_sample = 2 * slots * d.h;
  ops.push_back(gate);
  if (shape.gated_mlp) {
    ops.push_back(expert_linear("expert_up", TensorSplit::columns, shape, rows, width, d.h));
    ops.push_back(memory_bound("expert_swiglu", TensorSplit::heads, 6 * slots * width, 2 * slots * width,
                                   6 * slots * width));
  } else {
    ops.push_back(gelu("expert_gelu", shape, slots * width));
  }
  Operator down = expert_linear("expert_down", TensorSplit::rows, shape, rows, d.h, width);
  down.saved_bytes_per_sample      = 2 * slots * width;
  down.all_to_all_bytes_per_sample = 2 * slots * d.h; // the outputs go back to their tokens' devices
  ops.push_back(down);
  // Weighs each copy by its router probability and sums a token's copies; keeps the copies for the
  // probabilities' gradient.
  ops.push_back(memory_bound("token_combine", TensorSplit::replicated, 2 * slots * d.h + 2 * d.s * d.h,
                             2 * slots * d.h, 2 * slots * d.h));
  return ops;
}

/// The MLP of block `index`: dense, or a sparse block's mixture of experts; then the dropout-add.
std::vector<Operator> mlp_operators(const TransformerShape& shape, int index)
{
  std::vector<Operator> ops = shape.sparse_block(index)
                                  ? moe_operators(shape)
                                  : feed_forward(shape, static_cast<double>(shape.intermediate), "mlp");
  ops.push_back(dropout_add("mlp_dropout_add", shape));
  return ops;
}

/// Pre-norm blocks normalise before each sublayer; post-norm (bert) after its residual.
std::vector<Operator> with_norm(std::vector<Operator> sublayer, Operator norm_op, bool post_norm)
{
  if (post_norm)
    sublayer.push_back(std::move(norm_op));
  else
    sublayer.insert(sublayer.begin(), std::move(norm_op));
  return sublayer;
}

/// A block's attention half and MLP half with their norms: one before each sublayer (after it when post-norm),
/// one shared by both (Falcon-7B's parallel block: the MLP half reads the attention half's norm), and Gemma-2's
/// norm of each sublayer's output besides.
std::vector<Operator> attention_half(const TransformerShape& shape)
{
  auto ops = with_norm(attention_operators(shape), norm("norm_1", shape), shape.post_norm);
  if (shape.sandwich_norms)
    ops.push_back(norm("post_attention_norm", shape));
  return ops;
}

std::vector<Operator> mlp_half(const TransformerShape& shape, int index)
{
  auto ops = shape.shared_block_norm ? mlp_operators(shape, index)
                                     : with_norm(mlp_operators(shape, index), norm("norm_2", shape), shape.post_norm);
  if (shape.sandwich_norms)
    ops.push_back(norm("post_mlp_norm", shape));
  return ops;
}

Layer layer_of(std::string name, std::string kind, std::vector<Operator> operators, double activation_bytes)
{
  Layer layer;
  layer.name                        = std::move(name);
  layer.kind                        = std::move(kind);
  layer.operators                   = std::move(operators);
  layer.activation_bytes_per_sample = activation_bytes;
  apply_operator_totals(layer);
  return layer;
}

Layer embedding_layer(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  // A vocabulary-parallel lookup (token ids kept, int64, for the gradient scatter), the position and token-type
  // embeddings added, the dropout on the output (Korthikanti sec. 4.3); a post-norm model also normalises.
  // Under autocast the tables are fp32, and so is what they write: the residual stream starts fp32.
  const double r  = stream_bytes(shape);
  Operator lookup = memory_bound("embedding_lookup", TensorSplit::vocabulary, 8 * d.s + 2 * r * d.s * d.h, r * d.s * d.h, 8 * d.s,
                                 d.v * d.h);
  // Its backward writes the whole (vocabulary / tp) x h gradient table, touched or not.
  lookup.backward_fixed_bytes = r * d.v * d.h;
  make_eager(lookup, shape, 1, 3); // backward: zero the table, sort the ids, sum their rows
  std::vector<Operator> ops{lookup};
  const double positions = (shape.max_positions > 0 ? shape.max_positions + shape.position_offset : 0) +
                           shape.type_vocab;
  if (positions > 0) {
    Operator add = memory_bound("position_embedding", TensorSplit::replicated, 3 * r * d.s * d.h, r * d.s * d.h, 0,
                                 positions * d.h);
    add.backward_fixed_bytes = r * positions * d.h;
    add.tensors              = (shape.max_positions > 0 ? 1 : 0) + (shape.type_vocab > 0 ? 1 : 0);
    make_eager(add, shape, 2, 4);
    ops.push_back(add);
  }
  if (shape.post_norm || shape.embedding_norm)
    ops.push_back(norm("embedding_norm", shape));
  if (trains_with_dropout(shape)) { // at p = 0 PyTorch's dropout returns its input: no kernel, no mask
    Operator dropout = memory_bound("embedding_dropout", TensorSplit::replicated, (1 + 2 * r) * d.s * d.h, r * d.s * d.h,
                                     d.s * d.h);
    make_eager(dropout, shape, 1, 1);
    ops.push_back(dropout);
  }
  return layer_of("embedding", "embedding", std::move(ops), r * d.s * d.h);
}

/// `ops` recomputed as the shape's selective policy says, for a layer whose input is `input_bytes` per sample
/// (core_attention: as the operators were built).
std::vector<Operator> under_selective_policy(const TransformerShape& shape, std::vector<Operator> ops,
                                             double input_bytes)
{
  // What the products keep in fp8 is what a policy then keeps or reruns. Eager SDPA's output is counted by the
  // kernel apart from the projection's own contiguous copy (append_attention_core); Megatron-LM's is one tensor.
  run_products_in_fp8(ops, shape.fp8, !shape.eager);
  if (shape.selective == SelectivePolicy::every_other_product)
    keep_every_other_product(ops, input_bytes);
  return ops;
}

Layer block_layer(const TransformerShape& shape, int index)
{
  const Dims d = dims_of(shape);
  std::vector<Operator> ops = attention_half(shape);
  for (Operator& op : mlp_half(shape, index))
    ops.push_back(std::move(op));
  const double boundary = stream_bytes(shape) * d.s * d.h;
  return layer_of("block." + std::to_string(index), "transformer",
                  under_selective_policy(shape, std::move(ops), boundary), boundary);
}

/// A block as its attention and MLP halves, each with its norms; the operators are block_layer's. Under
/// torchtitan's policy each half counts its own products, as a checkpoint of each would.
std::pair<Layer, Layer> split_block_layers(const TransformerShape& shape, int index)
{
  const Dims d           = dims_of(shape);
  const std::string name = "block." + std::to_string(index);
  const double boundary   = stream_bytes(shape) * d.s * d.h;
  return {layer_of(name + ".attention", "attention", under_selective_policy(shape, attention_half(shape), boundary),
                   boundary),
          layer_of(name + ".mlp", "mlp", under_selective_policy(shape, mlp_half(shape, index), boundary), boundary)};
}

/// Megatron's vocabulary-parallel cross entropy in fp32: the 16-bit logits read and cast (6sv), the max
/// subtracted, exponentiated and normalised in place (3 x 8sv); the fp32 probabilities are kept (4sv).
Operator megatron_cross_entropy(const TransformerShape& shape)
{
  const Dims d  = dims_of(shape);
  Operator loss = memory_bound("cross_entropy", TensorSplit::heads, 30 * d.s * d.v, 4 * d.s * d.v, 4 * d.s * d.v);
  loss.transient_bytes_per_sample = 4 * d.s * d.v; // the fp32 logit gradient
  return loss;
}

/// Hugging Face's ForCausalLMLoss in eager PyTorch: logits.float() (6sv), then cross_entropy as log_softmax
/// (read twice, written once: 12sv) and nll_loss, keeping log_softmax's fp32 output (4sv). Backward fills the
/// nll gradient with zeros (4sv), runs log_softmax's backward (12sv) and casts the result to 16-bit (6sv):
/// 22sv against the forward's 18, priced as twice. At its peak the fp32 output, the nll gradient and the logit
/// gradient are alive at once: 8sv beyond what it kept (the forward's end holds the 16-bit and fp32 logits
/// and the output: less).
Operator eager_cross_entropy(const TransformerShape& shape)
{
  const Dims d  = dims_of(shape);
  Operator loss = memory_bound("cross_entropy", TensorSplit::heads, 18 * d.s * d.v, 4 * d.s * d.v, 4 * d.s * d.v);
  loss.transient_bytes_per_sample = 8 * d.s * d.v;
  make_eager(loss, shape, 5, 5); // float, label shift, log_softmax, nll, reduction; ones, zeros, scatter, two
  return loss;
}

/// One kernel on the 16-bit logits, fp32 inside (flash-attn's CrossEntropyLoss, which MosaicML's
/// fused_crossentropy is): reads the logits (2sv) and keeps them with an fp32 log-sum-exp per token for backward,
/// which reads them again and writes a 16-bit gradient (not in place, flash-attn's default): no fp32 logits.
Operator fused_cross_entropy(const TransformerShape& shape)
{
  const Dims d  = dims_of(shape);
  Operator loss = memory_bound("cross_entropy", TensorSplit::heads, 2 * d.s * d.v, 2 * d.s * d.v,
                               2 * d.s * d.v + 4 * d.s);
  loss.transient_bytes_per_sample = 2 * d.s * d.v; // the 16-bit logit gradient
  return loss;
}

/// Liger's fused linear cross entropy: the output product and the loss run together over chunks of tokens
/// (chunk = BT / ceil(V / H) rounded up to a power of two), each chunk's logits written, turned into their
/// gradient in place and multiplied back at once, so no full logits are held: 2 bytes written, 2 read twice
/// and 2 written per logit, and one chunk's logits (up to 4sh per sample, the power of two) alive at a time.
/// The products' FLOPs stay the logits operator's (forward and backward), all run in the forward here.
Operator fused_linear_cross_entropy(const TransformerShape& shape)
{
  const Dims d  = dims_of(shape);
  Operator loss = memory_bound("cross_entropy", TensorSplit::heads, 8 * d.s * d.v, 4 * d.s * d.h, 0);
  loss.transient_bytes_per_sample = 4 * d.s * d.h;
  return loss;
}

Operator cross_entropy(const TransformerShape& shape)
{
  const LossKernel kernel = shape.loss != LossKernel::framework_default ? shape.loss
                            : shape.eager                               ? LossKernel::eager
                                                                        : LossKernel::megatron;
  switch (kernel) {
  case LossKernel::eager: return eager_cross_entropy(shape);
  case LossKernel::fused: return fused_cross_entropy(shape);
  case LossKernel::fused_linear: return fused_linear_cross_entropy(shape);
  case LossKernel::megatron:
  case LossKernel::framework_default: break;
  }
  return megatron_cross_entropy(shape);
}

Layer head_layer(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  // BERT's masked-LM transform (dense + norm) is left out, like in the usual 110 M count of bert-base: its
  // norm stands here without parameters.
  std::vector<Operator> ops{norm("final_norm", shape, !shape.post_norm)};
  // A tied projection still multiplies: its FLOPs count even though its weights belong to the embedding.
  // Megatron-LM pads the vocabulary to a multiple of 128 (--make-vocab-size-divisible-by), so its product stays
  // on the tensor cores; Hugging Face's modules multiply by the config's width (50,257 for GPT-2).
  const double width = shape.eager ? d.v : std::ceil(d.v / 128) * 128;
  Operator logits    = linear("logits", TensorSplit::columns, d.s, width, d.h, shape.logits_bias);
  logits.params      = (shape.tied_embeddings ? 0 : d.v * d.h) + (shape.logits_bias ? d.v : 0);
  logits.saved_bytes_per_sample = 2 * d.s * d.h;
  make_eager_linear(logits, shape, 1, true);
  ops.push_back(logits);
  ops.push_back(cross_entropy(shape));
  if (shape.pooler) // the first token only
    ops.push_back(linear("pooler", TensorSplit::replicated, 1, d.h, d.h, true));
  // The head ends the model: its output is the loss, one fp32 number.
  return layer_of("head", "head", std::move(ops), 4);
}

} // namespace

double transformer_block_params(const TransformerShape& shape)
{
  return block_layer(shape, 0).params;
}

Workload build_transformer(const TransformerShape& shape)
{
  // Readers validate user input; a shape reaching here malformed is a bug.
  HETSIM_ASSERT(shape.layers > 0 && shape.hidden > 0 && shape.heads > 0 &&
                (shape.head_dim > 0 || shape.hidden % shape.heads == 0));
  HETSIM_ASSERT(shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0);
  HETSIM_ASSERT(shape.intermediate > 0 && shape.vocab > 0 && shape.seq_len > 0);
  HETSIM_ASSERT(shape.experts == 0 || (shape.experts_per_token > 0 && shape.experts_per_token <= shape.experts &&
                                       shape.expert_intermediate > 0 && shape.sparse_step > 0 &&
                                       shape.capacity_factor >= 1));
  Workload workload;
  workload.name    = shape.name;
  workload.seq_len = shape.seq_len;
  workload.shape   = shape;
  workload.layers.reserve(shape.layers + 2);
  workload.layers.push_back(embedding_layer(shape));
  for (int i = 0; i < shape.layers; ++i) {
    if (!shape.split_blocks) {
      workload.layers.push_back(block_layer(shape, i));
      continue;
    }
    auto [attention, mlp] = split_block_layers(shape, i);
    workload.layers.push_back(std::move(attention));
    workload.layers.push_back(std::move(mlp));
  }
  workload.layers.push_back(head_layer(shape));
  return workload;
}

} // namespace hetsim::models
