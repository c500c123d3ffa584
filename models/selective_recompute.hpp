#pragma once
/// What a block keeps for its backward under selective recompute, and what its backward reruns: the policy is
/// the training stack's. A plan asks for selective recompute; its framework says which (FrameworkSettings).

#include "models/operator.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetsim::models {

enum class SelectivePolicy {
  /// Megatron-LM's --recompute-granularity selective with its default --recompute-modules core_attn
  /// (transformer_config.py:814 at core_v0.13.0): non-fused attention's sequence x sequence operators rerun
  /// from the Q, K and V they keep (Korthikanti et al. 2022, sec. 5); everything else is kept as without
  /// recompute. The operators' selectively_recomputed flags as the model builds them.
  core_attention,
  /// torchtitan's op-level selective activation checkpointing (selective_ac_option = "op"): each block keeps
  /// its input and the outputs of its odd-numbered matrix products (aten.mm; "Saves output of all compute ops,
  /// except every second mm") and of its fused attention kernel, and reruns everything else
  /// (torchtitan/parallelisms/parallelize_llama.py:214-264 at 9dec370, torchtitan's Llama 3 benchmark commit).
  every_other_product,
};

/// The name a plan file gives it: "core_attn" or "op".
std::string_view selective_policy_name(SelectivePolicy policy);
std::optional<SelectivePolicy> parse_selective_policy(std::string_view name);
/// The names a file may give, comma-separated, for error messages.
std::string selective_policy_names();

/// Sets `ops` (one block's forward, in order, whose input is `input_bytes_per_sample`) to be recomputed as
/// every_other_product says: a kept product or attention kernel keeps its output and is not rerun (a matrix
/// product's output, plus the fp32 log-sum-exp of an attention kernel), every other operator is rerun and keeps
/// nothing, the first keeping the block's input. Products with a bias (aten.addmm) and of routed experts
/// (torchtitan's grouped products) are not aten.mm: they do not count and are rerun.
void keep_every_other_product(std::vector<Operator>& ops, double input_bytes_per_sample);

} // namespace hetsim::models
