#pragma once
/// What a transformer is, whatever the family it was read from: the figures a framework's model arguments name.

#include <string>

namespace hetsim::models {

/// The shape of a transformer, whatever the family it was read from.
struct TransformerShape {
  std::string name;
  std::string family; ///< "llama", "gpt2", "bert"
  int layers           = 0;
  int hidden           = 0;
  int heads            = 0;
  int kv_heads         = 0; ///< grouped-query attention; equals heads without it
  int intermediate     = 0; ///< MLP width
  int vocab            = 0;
  int seq_len          = 0;
  int max_positions    = 0; ///< learned position embeddings (gpt2, bert); 0 for rotary (llama)
  int type_vocab       = 0; ///< bert token-type embeddings
  bool gated_mlp       = false; ///< llama SwiGLU: three projections instead of two
  bool biases          = true;
  bool tied_embeddings = true;  ///< output projection shares the input embedding
  bool rms_norm        = false; ///< llama RMSNorm: a scale and no bias
  bool post_norm       = false; ///< bert: norms after each sublayer and on the embeddings, none before the output
  bool pooler          = false; ///< bert: dense + tanh on the first token
  bool flash_attention = false; ///< fused attention keeps no seq x seq score matrices for backward
  /// Each block as two layers, "block.i.attention" (with the first norm) and "block.i.mlp" (with the second),
  /// so that per-layer decisions (OSDP's sharding) reach the operators inside a block.
  bool split_blocks = false;
};

} // namespace hetsim::models
