#pragma once
/// Closed-form parameter, FLOP and activation-memory figures of decoder/encoder transformer blocks.

#include "models/transformer_shape.hpp"
#include "models/workload.hpp"

#include <string>

namespace hetsim::models {

/// Whether the family's blocks train with dropout (GPT-2, BERT, OPT); Llama-style families and GPT-NeoX have
/// none, so neither eager PyTorch nor a Megatron-LM launch of them keeps a mask.
bool trains_with_dropout(const TransformerShape& shape);

/// Parameters of one block: attention, MLP and the two norms.
double transformer_block_params(const TransformerShape& shape);

/// The layer list: embedding, one block per layer (or two with split_blocks), then the head (final norm, output
/// projection, pooler). Layers are named "embedding", "block.0", ..., "head".
Workload build_transformer(const TransformerShape& shape);

} // namespace hetsim::models
