#include "models/selective_recompute.hpp"

#include "core/enum_names.hpp"

namespace hetsim::models {
namespace {

constexpr EnumNames<SelectivePolicy, 2> kNames{
    {{{SelectivePolicy::core_attention, "core_attn"}, {SelectivePolicy::every_other_product, "op"}}}};

/// 16-bit bytes per sample of what a kept attention kernel writes: its context and its fp32 log-sum-exp per
/// head and query. The kernel reads Q, K and V and writes those (transformer.cpp); the context's width is the
/// value heads', which multi-head latent attention makes other than the query heads' (k).
double output_bytes_per_sample(const Operator& op)
{
  const double queries = 2 * op.m * op.count * op.k;
  return op.bytes_per_sample - queries - op.key_value_bytes_per_sample;
}

} // namespace

std::string_view selective_policy_name(SelectivePolicy policy)
{
  return kNames.name(policy);
}

std::optional<SelectivePolicy> parse_selective_policy(std::string_view name)
{
  SelectivePolicy policy{};
  return kNames.parse(name, policy) ? std::optional(policy) : std::nullopt;
}

std::string selective_policy_names()
{
  return kNames.joined();
}

void keep_every_other_product(std::vector<Operator>& ops, double input_bytes_per_sample)
{
  int products = 0;
  for (Operator& op : ops) {
    op.selective_rerun_width = 0;
    if (op.kind == OperatorKind::fused_attention) {
      op.selectively_recomputed           = false;
      op.selective_saved_bytes_per_sample = output_bytes_per_sample(op);
      continue;
    }
    // A product with a bias is aten.addmm (nn.Linear on a contiguous input, GPT-2's Conv1D), not in torchtitan's
    // list: rerun, and not counted.
    if (op.kind != OperatorKind::linear || op.experts > 0 || op.tensors > 1) {
      op.selectively_recomputed           = true;
      op.selective_saved_bytes_per_sample = 0;
      continue;
    }
    // Each product it calls counts: the odd-numbered keep their outputs, the even-numbered are rerun.
    double kept = 0, rerun = 0;
    for (double width : op.call_widths.empty() ? std::vector<double>{op.n} : op.call_widths)
      (++products % 2 == 1 ? kept : rerun) += width;
    op.selectively_recomputed           = rerun > 0;
    op.selective_rerun_width            = kept > 0 ? rerun : 0; // all of it when nothing is kept
    op.selective_saved_bytes_per_sample = 2 * op.m * op.count * kept;
  }
  if (!ops.empty()) // the checkpoint holds the block's input
    *ops.front().selective_saved_bytes_per_sample += input_bytes_per_sample;
}

} // namespace hetsim::models
