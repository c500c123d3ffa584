#pragma once
/// A GPT-2-family transformer shape for tests across suites: GPT-2 medium by default (24 layers, hidden 1024,
/// 16 heads, 4h MLP, vocabulary 50,257, sequence 1,024, learned positions, tied embeddings).

#include "models/transformer.hpp"

namespace hetsim::models::testing {

inline TransformerShape gpt_shape(int layers = 24, int hidden = 1024, int heads = 16, int vocab = 50257,
                                  int seq_len = 1024)
{
  TransformerShape s;
  s.name          = "gpt";
  s.family        = "gpt2";
  s.layers        = layers;
  s.hidden        = hidden;
  s.heads         = heads;
  s.kv_heads      = heads;
  s.intermediate  = 4 * hidden;
  s.vocab         = vocab;
  s.seq_len       = seq_len;
  s.max_positions = seq_len;
  return s;
}

} // namespace hetsim::models::testing
