#include "costmodel/attention_speed.hpp"

#include "costmodel/sustained_clock.hpp"

namespace hetsim::costmodel {
namespace {

using models::AttentionKernel;

std::string sm(const GpuSpec& gpu)
{
  return "sm" + std::to_string(gpu.compute_capability);
}

std::string named(AttentionKernel kernel)
{
  return std::string(models::attention_kernel_name(kernel));
}

/// SDPA's choice, in PyTorch's order (sdp_utils.cpp, select_sdp_backend): cuDNN first on Hopper when the cuDNN
/// runtime is newer than 9.15 (check_prefer_cudnn_attention; the shared H200 traces: PyTorch 2.11, cuDNN 9.19,
/// cuDNN's kernels); then flash from sm80 (check_flash_attention_hardware_support), which takes no mask
/// (check_for_attn_mask); then the memory-efficient kernel from sm50, which takes one; math last. An older stack
/// runs flash first on Hopper too (FlashAttention 2's era): such a model names "flash2".
AttentionKernel sdpa_choice(int capability, bool explicit_mask)
{
  if (capability >= 90 && !explicit_mask)
    return AttentionKernel::cudnn;
  if (capability >= 80 && !explicit_mask)
    return AttentionKernel::flash2;
  if (capability >= 50 || capability == 0)
    return AttentionKernel::mem_efficient;
  return AttentionKernel::eager;
}

} // namespace

AttentionRun attention_run(AttentionKernel asked, const GpuSpec& gpu, bool explicit_mask)
{
  const int cc = gpu.compute_capability;
  AttentionRun run{asked, ""};
  auto fallback = [&](AttentionKernel kernel, const std::string& why) {
    run.kernel = kernel;
    run.reason = named(asked) + " does not run on " + gpu.name + " (" + why + "); priced as " + named(kernel) +
                 ", " + (kernel == AttentionKernel::mem_efficient || kernel == AttentionKernel::eager
                             ? "what PyTorch's SDPA runs there"
                             : "its framework's fallback");
  };
  switch (asked) {
  case AttentionKernel::framework_default:
  case AttentionKernel::sdpa:
    run.kernel = sdpa_choice(cc, explicit_mask);
    if (explicit_mask && cc >= 80)
      run.reason = "sdpa is handed an explicit mask (a sliding window shorter than the sequence): PyTorch runs its "
                   "memory-efficient kernel, not flash or cuDNN (sdp_utils.cpp check_for_attn_mask)";
    break;
  case AttentionKernel::flash2:
    // flash-attn 2's setup.py builds for sm80 and later and its interface refuses older GPUs ("FlashAttention
    // only supports Ampere GPUs or newer").
    if (cc > 0 && cc < 80)
      fallback(AttentionKernel::mem_efficient, sm(gpu) + "; FlashAttention 2 needs sm80 or later");
    else if (explicit_mask)
      run.reason = "flash2 takes no explicit mask: a sliding window runs as its window_size argument";
    break;
  case AttentionKernel::flash3:
    // flash-attn's hopper/ kernels use sm90 instructions (wgmma, TMA) only.
    if (cc != 90 && cc != 0)
      fallback(cc >= 80 ? AttentionKernel::flash2 : AttentionKernel::mem_efficient,
               sm(gpu) + "; FlashAttention 3 needs sm90");
    break;
  case AttentionKernel::cudnn:
    // cuDNN's fused flash attention (the frontend's SDPA graphs) supports sm80 and later.
    if (cc > 0 && cc < 80)
      fallback(AttentionKernel::mem_efficient, sm(gpu) + "; cuDNN's fused flash attention needs sm80 or later");
    break;
  case AttentionKernel::te_fused:
    // Transformer Engine's DotProductAttention picks its cuDNN FusedAttention on Hopper and flash-attn on
    // Ampere and Ada (dot_product_attention/utils.py, get_attention_backend); below sm80 neither runs and it
    // takes UnfusedDotProductAttention, which keeps the scores like Megatron-LM's fused softmax.
    if (cc >= 90 || cc == 0)
      run.kernel = AttentionKernel::cudnn;
    else if (cc >= 80)
      run.kernel = AttentionKernel::flash2;
    else
      fallback(AttentionKernel::fused_softmax, sm(gpu) + "; Transformer Engine's fused kernels need sm80 or later");
    break;
  case AttentionKernel::mem_efficient:
  case AttentionKernel::triton: // Triton compiles it for whatever GPU runs it
  case AttentionKernel::eager:
  case AttentionKernel::fused_softmax:
    break;
  }
  return run;
}

AttentionSpeed attention_speed(AttentionKernel kernel, const GpuSpec& gpu)
{
  const int cc = gpu.compute_capability;
  // Hopper's figures stand for the generations after it too (Blackwell), which nothing here measured.
  // The H20 is Hopper cut down to a seventh of the H100's products, unmeasured.
  const bool hopper = cc >= 90, measured_hopper = cc == 90 && gpu.name != "H20";
  AttentionSpeed s;
  if (cc == 0 && !models::keeps_scores(kernel)) {
    // Not an NVIDIA GPU, or one of unknown capability: no kernel's figures apply, and the whole square is priced
    // at the matrix-product ceiling (ceilings of 0).
    s.source = "no attention kernel measured on this architecture: the whole square at the product ceiling";
    return s;
  }
  switch (kernel) {
  case AttentionKernel::cudnn:
    // cuDNN's causal flash kernels as PyTorch's SDPA runs them, timed on an H200 (tests/data/h200: the cuda
    // executor's traces and PyTorch's alone, bf16, head sizes 64 and 128, 1,024 to 4,096 tokens): products at
    // 0.8 of peak, what a large product reaches on this chip; the softmax's depth (74) and the backward's
    // ceiling (0.65) fitted to those 18 kernels (within -11% to +21% of each). The depth is what the
    // exponentials alone predict within 20%: 3.9 TFLOP/s of them against 989 of products (FlashAttention-3,
    // Shah et al. 2024, sec. 3.1) make a score's exp cost 254 FLOPs of products, 63 of head size.
    // The FlashAttention-3 paper's cuDNN forward chart (H100, causal, head sizes 64/128/256) fits a ceiling of
    // 0.701, depth 50 and a query tile's overhead of 112 keys within 12%: 9% slower than these at 4k tokens and
    // head size 128, 26% at 1k and 64 (an older cuDNN, on an H100). The H200's own measurements stand.
    s = {0.8, 0.65, 74, 128, 0, true, 0, "H200 traces of cuDNN's SDPA kernels (tests/data/h200)", measured_hopper};
    if (!hopper)
      s.source = "Hopper's (H200 traces), carried over: cuDNN's Ampere kernels are unmeasured";
    else if (!measured_hopper)
      s.source = "Hopper's (H200 traces), carried over: cuDNN's kernels for this generation are unmeasured";
    break;
  // The rest are fitted, per kernel, to the papers' causal bar charts at head sizes 64 and 128 (and 256) over
  // 512 to 16k tokens (the papers count half the square; the model computes the diagonal's tiles whole):
  // ceiling, softmax depth and the query tile's overhead in one search each (experiments/attention_kernels/
  // fit.py holds the charts and the fit). Where a paper gives forward and backward together, they are split as
  // the FlashAttention-3 paper's separate charts split all three kernels it times on the H100: the backward
  // runs at 0.87 of the forward's rate (FA2 322 against 370, cuDNN 516 against 595, FA3 561 against 648
  // TFLOP/s, head size 128, 16k tokens).
  case AttentionKernel::flash3:
    // FlashAttention-3 paper (Shah et al. 2024), forward fp16 causal, head sizes 64/128/256: fit within 11%.
    s = {0.894, 0.778, 53, 128, 272, true, 0, "FlashAttention-3 paper (Shah et al. 2024), H100, fp16", true};
    break;
  case AttentionKernel::flash2:
  case AttentionKernel::te_fused:
    if (hopper)
      // FlashAttention-2 paper (Dao 2023), H100 forward + backward, causal, head sizes 64/128: fit within 2%.
      s = {0.431, 0.375, 20, 128, 208, true, 0,
           measured_hopper ? "FlashAttention-2 paper (Dao 2023), H100 forward and backward"
                           : "the H100's (FlashAttention-2 paper), carried over as a fraction of peak",
           measured_hopper};
    else
      // FlashAttention-2 paper, A100 80GB forward + backward, causal, head sizes 64/128: fit within 2%.
      s = {0.781, 0.679, 17, 128, 180, true, 0, "FlashAttention-2 paper (Dao 2023), A100 forward and backward",
           cc == 80};
    if (!hopper && cc != 80)
      s.source = "A100's (FlashAttention-2 paper), carried over as a fraction of peak";
    break;
  case AttentionKernel::mem_efficient:
    // xformers' CUTLASS kernels in the FlashAttention-2 paper's A100 chart (the kernel SDPA's memory-efficient
    // backend took from xformers), forward + backward, causal, head sizes 64/128: fit within 6%.
    s = {0.452, 0.394, 49, 128, 64, true, 0, "FlashAttention-2 paper (Dao 2023), xformers on A100", cc == 80};
    if (cc != 80)
      s.source = "A100's (xformers in the FlashAttention-2 paper), carried over as a fraction of peak";
    break;
  case AttentionKernel::triton:
    // FlashAttention's Triton kernel ("FlashAttention Triton" in the FlashAttention-2 paper's A100 chart, the
    // kernel MosaicML's attn_impl "triton" copies), forward + backward, causal, head sizes 64/128: within 12%.
    s = {0.285, 0.248, 0, 128, 48, true, 0, "FlashAttention-2 paper (Dao 2023), its Triton kernel on A100", cc == 80};
    if (cc != 80)
      s.source = "A100's (the Triton kernel in the FlashAttention-2 paper), carried over as a fraction of peak";
    break;
  case AttentionKernel::eager:
  case AttentionKernel::fused_softmax:
  case AttentionKernel::framework_default:
  case AttentionKernel::sdpa:
    // Two batched products at the matrix-product model and the scores through memory: forward writes the
    // 16-bit scores, the softmax reads and writes them (fp32 in eager PyTorch's softmax), the context product
    // reads them; the fused softmax reads and writes 16 bits once.
    s.fused       = false;
    s.score_bytes = kernel == AttentionKernel::fused_softmax ? 8 : 14;
    s.source      = "the matrix-product model, with the scores through memory";
    s.measured    = false;
    break;
  }
  // At the clock a training step sustains (sustained_clock.cpp); the H200 traces' figures were such steps.
  const double sustained = sustained_clock_fraction(gpu);
  s.forward_ceiling *= sustained;
  s.backward_ceiling *= sustained;
  return s;
}

std::vector<std::string> attention_notes(const models::Workload& workload, const Cluster& cluster)
{
  const models::Operator* fused = nullptr;
  for (const models::Layer& layer : workload.layers)
    for (const models::Operator& op : layer.operators)
      if (!fused && op.kind == models::OperatorKind::fused_attention)
        fused = &op;
  std::vector<std::string> notes;
  if (!fused)
    return notes;
  for (const GpuSpec& gpu : cluster.gpus()) {
    const AttentionRun run = attention_run(fused->attention, gpu, fused->explicit_mask);
    const AttentionSpeed speed = attention_speed(run.kernel, gpu);
    std::string line = "attention on " + gpu.name + ": " + named(run.kernel);
    if (!run.reason.empty())
      line += " (" + run.reason + ")";
    if (!speed.measured)
      line += "; its speed there is unmeasured: " + std::string(speed.source);
    if (!run.reason.empty() || !speed.measured)
      notes.push_back(line);
  }
  return notes;
}

} // namespace hetsim::costmodel
