#pragma once
/// A small Mixtral-style mixture-of-experts shape for tests across suites: 4 blocks of hidden 256 with grouped-
/// query attention, every block's MLP 4 SwiGLU experts of width 512 of which each token visits 2, untied
/// embeddings, sequence 128.

#include "models/transformer.hpp"

namespace hetsim::models::testing {

inline TransformerShape moe_shape(int experts = 4, int experts_per_token = 2, int layers = 4)
{
  TransformerShape s;
  s.name                = "moe";
  s.family              = "llama";
  s.layers              = layers;
  s.hidden              = 256;
  s.heads               = 8;
  s.kv_heads            = 2;
  s.intermediate        = 512;
  s.vocab               = 1000;
  s.seq_len             = 128;
  s.gated_mlp           = true;
  s.biases              = false;
  s.tied_embeddings     = false;
  s.rms_norm            = true;
  s.flash_attention     = true;
  s.experts             = experts;
  s.experts_per_token   = experts_per_token;
  s.expert_intermediate = 512;
  return s;
}

} // namespace hetsim::models::testing
