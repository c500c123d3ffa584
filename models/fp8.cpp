#include "models/fp8.hpp"

#include "core/enum_names.hpp"

namespace hetsim::models {
namespace {

constexpr EnumNames<Fp8Recipe, 5> kNames{{{{Fp8Recipe::none, "none"},
                                            {Fp8Recipe::delayed, "delayed"},
                                            {Fp8Recipe::tensorwise, "tensorwise"},
                                            {Fp8Recipe::mxfp8, "mxfp8"},
                                            {Fp8Recipe::blockwise, "blockwise"}}}};

} // namespace

std::string_view fp8_recipe_name(Fp8Recipe recipe)
{
  return kNames.name(recipe);
}

std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view name)
{
  Fp8Recipe recipe{};
  return kNames.parse(name, recipe) ? std::optional(recipe) : std::nullopt;
}

std::string fp8_recipe_names()
{
  return kNames.joined();
}

// Transformer Engine's quantizers (transformer_engine/pytorch/tensor/*_tensor.py at release 2.x): a 16-bit
// read and two fp8 writes (its cast_transpose kernels write the row-wise copy and the column-wise one the
// backward's products take) for every recipe; tensorwise reads the tensor once more for this step's amax
// first (Float8CurrentScaling), delayed takes its scale from the history and computes the amax in the same pass;
// mxfp8 writes an 8-bit scale per 32 elements in each orientation, blockwise a 4-byte one per 128.
double fp8_quantize_bytes_per_element(Fp8Recipe recipe)
{
  switch (recipe) {
  case Fp8Recipe::none: return 0;
  case Fp8Recipe::delayed: return 2 + 2;
  case Fp8Recipe::tensorwise: return 2 + 2 + 2;
  case Fp8Recipe::mxfp8: return 2 + 2 + 2.0 / 32;
  case Fp8Recipe::blockwise: return 2 + 2 + 2 * 4.0 / 128;
  }
  return 0;
}

namespace {

/// Whether the last product or attention kernel before `ops[i]` is a fused attention: `ops[i]` projects its output.
bool projects_fused_attention(const std::vector<Operator>& ops, std::size_t i)
{
  for (std::size_t j = i; j-- > 0;) {
    if (ops[j].kind == OperatorKind::fused_attention)
      return true;
    if (ops[j].kind == OperatorKind::linear || ops[j].kind == OperatorKind::batched_matmul)
      return false;
  }
  return false;
}

} // namespace

void run_products_in_fp8(std::vector<Operator>& ops, Fp8Recipe recipe, bool shared_attention_output)
{
  if (recipe == Fp8Recipe::none)
    return;
  const double per_element = fp8_quantize_bytes_per_element(recipe);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Operator& op = ops[i];
    if (op.kind != OperatorKind::linear || op.name == "router")
      continue;
    op.fp8 = true;
    // The input once per call (m x k a sample; routed experts' rows are their tokens'), the output gradient
    // (m x n) once per backward.
    const double calls             = std::max(1.0, op.experts);
    op.quantize_bytes_per_sample   = per_element * op.m * op.k * calls;
    op.quantize_backward_bytes_per_sample = per_element * op.m * op.n * calls;
    // Transformer Engine keeps the fp8 input for the weight gradient, not the 16-bit one; but a fused attention
    // kernel keeps its output for its own backward (FusedAttention saves q, k, v and out), so where that is the
    // projection's input the fp8 copy is kept beside it.
    const double input_16bit = 2 * op.m * op.k * calls;
    if (shared_attention_output && projects_fused_attention(ops, i))
      op.saved_bytes_per_sample += input_16bit / 2;
    else if (op.saved_bytes_per_sample >= input_16bit)
      op.saved_bytes_per_sample -= input_16bit / 2;
  }
}

} // namespace hetsim::models
