#pragma once
/// How the training loss turns logits into a cross entropy: the kernels a stack runs for it decide whether fp32
/// logits are ever held. The model file names it ("loss": "fused"); left out, the framework's default stands.

#include <optional>
#include <string>
#include <string_view>

namespace hetsim::models {

enum class LossKernel {
  framework_default, ///< not given: eager under Hugging Face modules, megatron under Megatron-LM's
  eager,        ///< Hugging Face's ForCausalLMLoss: logits.float(), log_softmax and nll op by op, fp32 kept
  megatron,     ///< Megatron-LM's vocabulary-parallel cross entropy in fp32, fp32 probabilities kept
  fused,        ///< one kernel on the 16-bit logits, fp32 inside, gradient in place (flash-attn's xentropy,
                ///< MosaicML's fused_crossentropy; Megatron-LM's --cross-entropy-loss-fusion)
  fused_linear, ///< the output product and the loss in chunks, no full logits ever held (Liger's
                ///< LigerFusedLinearCrossEntropyLoss)
};

/// The name a file gives it ("fused"); framework_default has "default".
std::string_view loss_kernel_name(LossKernel kernel);
/// The kernel a file names, or nullopt.
std::optional<LossKernel> parse_loss_kernel(std::string_view name);
/// The names a file may give, comma-separated, for error messages.
std::string loss_kernel_names();

} // namespace hetsim::models
