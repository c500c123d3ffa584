#include "models/transformer.hpp"

#include "core/error.hpp"

#include <utility>

namespace hetsim::models {
namespace {

// Every figure is per sample (one sequence) in doubles: seq^2 * heads overflows int for long sequences.
struct Dims {
  double s, h, a, kv, ffn, v;
};

Dims dims_of(const TransformerShape& shape)
{
  const double head_dim = static_cast<double>(shape.hidden) / shape.heads;
  return Dims{static_cast<double>(shape.seq_len),      static_cast<double>(shape.hidden),
              static_cast<double>(shape.heads),        head_dim * shape.kv_heads,
              static_cast<double>(shape.intermediate), static_cast<double>(shape.vocab)};
}

/// Weights that take part in matrix multiplications (2 FLOPs per weight per token): Q and O are h x h,
/// K and V are h x kv (narrower under grouped-query attention); the MLP has two or, gated, three h x ffn.
double block_matmul_params(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  return 2 * d.h * d.h + 2 * d.h * d.kv + (shape.gated_mlp ? 3 : 2) * d.h * d.ffn;
}

double norm_params(const TransformerShape& shape)
{
  return shape.rms_norm ? shape.hidden : 2.0 * shape.hidden;
}

/// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (2022), eq. 1:
/// sbh(34 + 5as/h) bytes per layer with 16-bit activations, no recompute, no tensor parallelism. Their terms
/// (per sequence, b = 1) are kept, with the widths each one really has:
///  - attention 11sh + 5as^2: QKV input 2sh, Q 2sh, K and V 2s*kv each (kv < h under grouped-query attention),
///    softmax output 2as^2, its dropout mask as^2 and output 2as^2, output-projection input 2sh, dropout mask sh;
///  - MLP 19sh for a 4h GeLU MLP: input 2sh, dropout mask sh, and 2s*ffn for each of the two ffn-wide tensors
///    (GeLU input and output). A gated (SwiGLU) MLP keeps four: gate output, SiLU output, up output and
///    their product (the down projection's input), so 8s*ffn;
///  - the two norms' inputs, 4sh.
/// Dropout masks are counted for every family, which overestimates llama (trained without dropout) by 2sh.
/// Flash attention recomputes the scores in backward and keeps only a fp32 log-sum-exp per head and token.
double block_saved_bytes(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  const double scores = shape.flash_attention ? 4 * d.a * d.s : 5 * d.a * d.s * d.s;
  double attention    = 7 * d.s * d.h + 4 * d.s * d.kv + scores;
  double mlp       = 3 * d.s * d.h + (shape.gated_mlp ? 8 : 4) * d.s * d.ffn;
  double norms     = 4 * d.s * d.h;
  return attention + mlp + norms;
}

Layer embedding_layer(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  Layer layer;
  layer.name   = "embedding";
  layer.kind   = "embedding";
  layer.params = (d.v + shape.max_positions + shape.type_vocab) * d.h + (shape.post_norm ? norm_params(shape) : 0);
  // Lookups and additions only: no matmul FLOPs worth counting.
  layer.activation_bytes_per_sample = 2 * d.s * d.h;
  // The token ids (int64) for the gradient scatter and the dropout mask on the output (Korthikanti sec. 4.3);
  // a post-norm model also keeps the norm's input.
  layer.saved_activation_bytes_per_sample = 8 * d.s + d.s * d.h + (shape.post_norm ? 2 * d.s * d.h : 0);
  layer.tensor_parallel_all_reduces       = default_tensor_parallel_all_reduces(layer.kind);
  return layer;
}

Layer block_layer(const TransformerShape& shape, int index)
{
  const Dims d = dims_of(shape);
  Layer layer;
  layer.name   = "block." + std::to_string(index);
  layer.kind   = "transformer";
  layer.params = transformer_block_params(shape);
  // Projections, then the attention scores QK^T and the context AV: 2 s^2 h FLOPs each, whatever kv_heads is.
  layer.forward_flops_per_sample          = 2 * block_matmul_params(shape) * d.s + 4 * d.s * d.s * d.h;
  layer.backward_flops_per_sample         = 2 * layer.forward_flops_per_sample;
  layer.activation_bytes_per_sample       = 2 * d.s * d.h;
  layer.saved_activation_bytes_per_sample = block_saved_bytes(shape);
  layer.tensor_parallel_all_reduces       = default_tensor_parallel_all_reduces(layer.kind);
  return layer;
}

/// A block as its attention and MLP halves; parameters, FLOPs and saved bytes add up to block_layer's.
std::pair<Layer, Layer> split_block_layers(const TransformerShape& shape, int index)
{
  const Dims d = dims_of(shape);
  const Layer whole = block_layer(shape, index);
  Layer attention   = whole;
  Layer mlp         = whole;
  attention.name    = whole.name + ".attention";
  attention.kind    = "attention";
  mlp.name          = whole.name + ".mlp";
  mlp.kind          = "mlp";
  const double mlp_matmul = (shape.gated_mlp ? 3 : 2) * d.h * d.ffn;
  const double mlp_biases = shape.biases ? (shape.gated_mlp ? 2 : 1) * d.ffn + d.h : 0;
  mlp.params              = mlp_matmul + mlp_biases + norm_params(shape);
  attention.params        = whole.params - mlp.params;
  mlp.forward_flops_per_sample       = 2 * mlp_matmul * d.s;
  attention.forward_flops_per_sample = whole.forward_flops_per_sample - mlp.forward_flops_per_sample;
  mlp.backward_flops_per_sample       = 2 * mlp.forward_flops_per_sample;
  attention.backward_flops_per_sample = 2 * attention.forward_flops_per_sample;
  // block_saved_bytes' MLP term and one of the two norm inputs; the rest is attention's.
  mlp.saved_activation_bytes_per_sample       = 3 * d.s * d.h + (shape.gated_mlp ? 8 : 4) * d.s * d.ffn + 2 * d.s * d.h;
  attention.saved_activation_bytes_per_sample = whole.saved_activation_bytes_per_sample -
                                                mlp.saved_activation_bytes_per_sample;
  attention.tensor_parallel_all_reduces = default_tensor_parallel_all_reduces(attention.kind);
  mlp.tensor_parallel_all_reduces       = default_tensor_parallel_all_reduces(mlp.kind);
  return {attention, mlp};
}

Layer head_layer(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  Layer layer;
  layer.name = "head";
  layer.kind = "head";
  // BERT's masked-LM transform (dense + norm) is left out, like in the usual 110 M count of bert-base.
  const double final_norm = shape.post_norm ? 0 : norm_params(shape);
  const double projection = shape.tied_embeddings ? 0 : d.v * d.h;
  const double pooler     = shape.pooler ? d.h * d.h + d.h : 0;
  layer.params            = final_norm + projection + pooler;
  // A tied projection still multiplies: its FLOPs count even though its weights belong to the embedding.
  // The pooler only sees the first token.
  layer.forward_flops_per_sample  = 2 * d.h * d.v * d.s + (shape.pooler ? 2 * d.h * d.h : 0);
  layer.backward_flops_per_sample = 2 * layer.forward_flops_per_sample;
  // The head ends the model: its output is the loss, one fp32 number.
  layer.activation_bytes_per_sample = 4;
  // Korthikanti sec. 4.3: the norm's and the projection's inputs (4sh) and the fp32 logits for the softmax (4sv).
  layer.saved_activation_bytes_per_sample = 4 * d.s * d.h + 4 * d.s * d.v;
  layer.tensor_parallel_all_reduces       = default_tensor_parallel_all_reduces(layer.kind);
  return layer;
}

} // namespace

double transformer_block_params(const TransformerShape& shape)
{
  const Dims d = dims_of(shape);
  double biases = 0;
  if (shape.biases)
    biases = (2 * d.h + 2 * d.kv) + (shape.gated_mlp ? 2 : 1) * d.ffn + d.h;
  return block_matmul_params(shape) + biases + 2 * norm_params(shape);
}

Workload build_transformer(const TransformerShape& shape)
{
  // Readers validate user input; a shape reaching here malformed is a bug.
  HETSIM_ASSERT(shape.layers > 0 && shape.hidden > 0 && shape.heads > 0 && shape.hidden % shape.heads == 0);
  HETSIM_ASSERT(shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0);
  HETSIM_ASSERT(shape.intermediate > 0 && shape.vocab > 0 && shape.seq_len > 0);
  Workload workload;
  workload.name    = shape.name;
  workload.seq_len = shape.seq_len;
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
