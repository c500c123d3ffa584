#pragma once
/// FP8 training as Transformer Engine runs it under Megatron-LM (--fp8-format hybrid --fp8-recipe R): the
/// products of a transformer block's linear layers in fp8, E4M3 forward and E5M2 gradients, each input
/// quantized before its forward product and each output gradient before its backward ones; attention, norms,
/// activations, the embedding, the output layer and the optimizer stay in 16 or 32 bits.

#include "models/operator.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetsim::models {

/// How tensors are scaled to fp8 (Megatron-Core's --fp8-recipe, arguments.py at core_v0.13.0; Transformer
/// Engine's recipes).
enum class Fp8Recipe {
  none,       ///< no fp8: the products run in the plan's 16-bit dtype
  delayed,    ///< one scale per tensor from the amax history of earlier steps (DelayedScaling, Megatron's default)
  tensorwise, ///< one scale per tensor from this step's amax: a reduction over it before each cast
  mxfp8,      ///< a scale per 32 elements (MXFP8BlockScaling): Blackwell's block-scaled tensor cores only
  blockwise,  ///< a scale per 128 elements or 128 x 128 weight block (Float8BlockScaling, DeepSeek-V3's)
};

/// The name a plan gives it ("delayed"; none is "none").
std::string_view fp8_recipe_name(Fp8Recipe recipe);
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view name);
/// The recipes a plan may name, comma-separated, for error messages.
std::string fp8_recipe_names();

/// Bytes per element one quantization moves: the 16-bit tensor read (twice where a scale needs this step's
/// amax first), written in fp8 twice (row-wise and column-wise: the backward's products read the transposes),
/// and the scales.
double fp8_quantize_bytes_per_element(Fp8Recipe recipe);

/// Sets the linear operators of one block's forward `ops` to run in fp8 under `recipe`: their products at the
/// GPU's fp8 rate, their quantizations as passes of their own (Operator::quantize_bytes_*), and their saved
/// input kept in fp8 (one byte an element instead of two). `shared_attention_output`: the output projection's
/// 16-bit input is the very tensor the fused attention kernel keeps for its backward (Transformer Engine's
/// FusedAttention under Megatron-LM), so its fp8 copy is kept beside it, not instead. The router of a mixture of
/// experts stays in 16 bits.
void run_products_in_fp8(std::vector<Operator>& ops, Fp8Recipe recipe, bool shared_attention_output);

} // namespace hetsim::models
