#include "models/workload.hpp"

#include "core/presets.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace hetsim::models;

namespace {

TransformerShape llama(int layers, int hidden, int intermediate, int heads, int kv_heads, int seq_len)
{
  TransformerShape s;
  s.name            = "llama";
  s.family          = "llama";
  s.layers          = layers;
  s.hidden          = hidden;
  s.heads           = heads;
  s.kv_heads        = kv_heads;
  s.intermediate    = intermediate;
  s.vocab           = 32000;
  s.seq_len         = seq_len;
  s.gated_mlp       = true;
  s.biases          = false;
  s.tied_embeddings = false;
  s.rms_norm        = true;
  return s;
}

TransformerShape gpt2_medium()
{
  TransformerShape s = testing::gpt_shape();
  s.name              = "gpt2-medium";
  return s;
}

} // namespace

TEST_CASE("parameter counts match the published models")
{
  SUBCASE("llama-2-7b: exactly the checkpoint's 6,738,415,616")
  {
    CHECK(build_transformer(llama(32, 4096, 11008, 32, 32, 4096)).total_params() == 6738415616.0);
  }
  SUBCASE("llama-2-70b: grouped-query attention, 68.98 B")
  {
    CHECK(build_transformer(llama(80, 8192, 28672, 64, 8, 4096)).total_params() == doctest::Approx(68.98e9).epsilon(0.01));
  }
  SUBCASE("gpt2-medium: tied output projection, 355 M")
  {
    Workload w = build_transformer(gpt2_medium());
    CHECK(w.total_params() == doctest::Approx(355e6).epsilon(0.02));
    CHECK(w.layers.back().params == 2 * 1024); // only the final norm: the projection is the embedding
  }
  SUBCASE("the presets, loaded through their Hugging Face configs")
  {
    CHECK(load_workload("preset:llama-2-7b").total_params() == 6738415616.0);
    CHECK(load_workload("preset:llama-2-70b").total_params() == doctest::Approx(68.98e9).epsilon(0.01));
    CHECK(load_workload("preset:gpt2-medium").total_params() == doctest::Approx(355e6).epsilon(0.02));
    CHECK(load_workload("preset:bert-base-uncased").total_params() == doctest::Approx(109.5e6).epsilon(0.02));
    CHECK(load_workload("preset:gpt3-1.3b").total_params() == doctest::Approx(1.3e9).epsilon(0.02));
  }
}

TEST_CASE("layers are the embedding, one block per layer, then the head")
{
  Workload w = build_transformer(gpt2_medium());
  REQUIRE(w.layers.size() == 26);
  CHECK(w.name == "gpt2-medium");
  CHECK(w.seq_len == 1024);
  CHECK(w.layers[0].name == "embedding");
  CHECK(w.layers[0].kind == "embedding");
  CHECK(w.layers[1].name == "block.0");
  CHECK(w.layers[24].name == "block.23");
  CHECK(w.layers[25].name == "head");
  CHECK(w.layers[25].kind == "head");
  CHECK(w.layers[0].tensor_parallel_all_reduces == 1);
  CHECK(w.layers[1].tensor_parallel_all_reduces == 2);
  CHECK(w.layers[25].tensor_parallel_all_reduces == 0);
}

TEST_CASE("forward FLOPs are about 2 x params x tokens for a large model at a short sequence")
{
  Workload w = build_transformer(llama(32, 4096, 11008, 32, 32, 128));
  CHECK(w.forward_flops_per_sample() == doctest::Approx(2 * w.total_params() * 128).epsilon(0.03));
  CHECK(w.backward_flops_per_sample() == doctest::Approx(2 * w.forward_flops_per_sample()));
}

TEST_CASE("block FLOPs: projections plus attention scores and context")
{
  Workload w     = build_transformer(gpt2_medium());
  const double s = 1024, h = 1024;
  // 12 h^2 matmul weights at 2 FLOPs per weight per token, then QK^T and AV at 2 s^2 h each.
  CHECK(w.layers[1].forward_flops_per_sample == doctest::Approx(2 * 12 * h * h * s + 4 * s * s * h));
  // The tied head still runs its projection, over the vocabulary Megatron-LM pads to a multiple of 128; Hugging
  // Face's eager modules multiply by the config's 50,257.
  CHECK(w.layers.back().forward_flops_per_sample == doctest::Approx(2 * h * 50304 * s));
  TransformerShape eager = gpt2_medium();
  eager.eager            = true;
  CHECK(build_transformer(eager).layers.back().forward_flops_per_sample == doctest::Approx(2 * h * 50257 * s));
  CHECK(build_transformer(eager).total_params() == doctest::Approx(w.total_params()));
}

TEST_CASE("activation bytes: boundary 2sh, saved per block as in Korthikanti et al.")
{
  Workload w     = build_transformer(gpt2_medium());
  const double s = 1024, h = 1024, a = 16;
  CHECK(w.layers[0].activation_bytes_per_sample == 2 * s * h);
  CHECK(w.layers[1].activation_bytes_per_sample == 2 * s * h);
  CHECK(w.layers[1].saved_activation_bytes_per_sample == doctest::Approx(34 * s * h + 5 * a * s * s));
  CHECK(w.layers.back().saved_activation_bytes_per_sample >= 4 * s * 50257); // fp32 logits

  SUBCASE("a gated MLP keeps three ffn-wide tensors (four eager), grouped-query attention smaller K and V, no "
          "dropout masks")
  {
    // Megatron-LM's fused SwiGLU keeps its input, the gate and up outputs, and the down projection its own;
    // eager PyTorch's autograd keeps the SiLU's output too.
    TransformerShape shape = llama(80, 8192, 28672, 64, 8, 4096);
    const double ls = 4096, lh = 8192, kv = 1024, ffn = 28672;
    CHECK(build_transformer(shape).layers[1].saved_activation_bytes_per_sample ==
          doctest::Approx(12 * ls * lh + 4 * ls * kv + 6 * ls * ffn + 5 * 64 * ls * ls));
    shape.eager = true;
    const Workload eager = build_transformer(shape);
    double swiglu = 0;
    for (const Operator& op : eager.layers[1].operators)
      swiglu += op.name == "swiglu" ? op.saved_bytes_per_sample : 0;
    CHECK(swiglu == doctest::Approx(6 * ls * ffn));
  }
}

TEST_CASE("every model preset loads")
{
  for (const auto& preset : hetsim::presets()) {
    if (preset.kind != "model")
      continue;
    CAPTURE(preset.name);
    Workload w = load_workload("preset:" + preset.name);
    CHECK(w.name == preset.name);
    CHECK(w.seq_len > 0);
    CHECK(w.layers.size() >= 3);
  }
  CHECK(load_workload("preset:llama-2-7b").seq_len == 4096);
  CHECK(load_workload("preset:bert-base-uncased").seq_len == 512);
  CHECK(load_workload("preset:gpt3-1.3b").seq_len == 2048);
}

TEST_CASE("default tensor-parallel all-reduces by kind")
{
  CHECK(default_tensor_parallel_all_reduces("transformer") == 2);
  CHECK(default_tensor_parallel_all_reduces("attention") == 1);
  CHECK(default_tensor_parallel_all_reduces("mlp") == 1);
  CHECK(default_tensor_parallel_all_reduces("embedding") == 1);
  CHECK(default_tensor_parallel_all_reduces("head") == 0);
  CHECK(default_tensor_parallel_all_reduces("conv") == 0);
}

TEST_CASE("flash attention drops the seq x seq scores from saved activations")
{
  hetsim::models::TransformerShape shape;
  shape.family = "gpt2";
  shape.layers = 1, shape.hidden = 1024, shape.heads = 16, shape.kv_heads = 16, shape.intermediate = 4096;
  shape.vocab = 50257, shape.seq_len = 1024, shape.max_positions = 1024;
  const double classic = hetsim::models::build_transformer(shape).layers[1].saved_activation_bytes_per_sample;
  shape.flash_attention = true;
  const double fused = hetsim::models::build_transformer(shape).layers[1].saved_activation_bytes_per_sample;
  CHECK(classic - fused == doctest::Approx(5.0 * 16 * 1024 * 1024 - 4.0 * 16 * 1024));
  // The llama presets train with flash attention: a block keeps less than the 5as^2 scores alone would take.
  CHECK(hetsim::models::load_workload("preset:llama-2-70b").layers[1].saved_activation_bytes_per_sample <
        5.0 * 64 * 4096 * 4096);
}

namespace {

/// GPT-2 medium as Hugging Face's modules run under torch.autocast, with SDPA and the op-by-op gelu_new.
TransformerShape hf_gpt2_medium_autocast()
{
  TransformerShape s  = gpt2_medium();
  s.flash_attention   = true;
  s.fused_gelu        = false;
  s.eager             = true;
  s.autocast          = true;
  return s;
}

double launches(const Layer& layer, bool backward)
{
  double total = 0;
  for (const Operator& op : layer.operators)
    for (const Kernel& kernel : operator_kernels(op, 1, 1, backward))
      total += kernel.launches;
  return total;
}

} // namespace

TEST_CASE("eager PyTorch under autocast: what autograd keeps per GPT-2 block")
{
  const Workload w = build_transformer(hf_gpt2_medium_autocast());
  const double s = 1024, h = 1024, a = 16;
  // fp32 norm inputs 2 x 4sh; the 16-bit input copies of the QKV, MLP-up and output projections 2sh each and
  // of the fp32 GeLU output 8sh; SDPA's Q, K, V and output 8sh with its fp32 log-sum-exp 4as; two dropout masks
  // sh each; gelu_new in fp32: x, tanh and 1 + tanh at 4 bytes, 0.5x at 2, over the 4h MLP: 56sh.
  CHECK(w.layers[1].saved_activation_bytes_per_sample == doctest::Approx(88 * s * h + 4 * a * s));
  // The residual stream between blocks is fp32: what checkpointing keeps per block.
  CHECK(w.layers[1].activation_bytes_per_sample == 4 * s * h);
  // The loss keeps fp32 log-probabilities; its backward holds two more fp32 copies of the logits.
  const Operator& loss = w.layers.back().operators.back();
  CHECK(loss.saved_bytes_per_sample == 4 * s * 50257);
  CHECK(loss.transient_bytes_per_sample == 8 * s * 50257);
}

TEST_CASE("eager PyTorch: kernel launches of a GPT-2 medium step as the profiler counts them")
{
  const Workload w = build_transformer(hf_gpt2_medium_autocast());
  // A block: 33 launches forward (10 of them gelu_new's, 8 autocast's casts of weights, biases and inputs), 51
  // backward.
  CHECK(launches(w.layers[1], false) == 33);
  CHECK(launches(w.layers[1], true) == 51);
  double step = 0;
  for (const Layer& layer : w.layers)
    step += launches(layer, false) + launches(layer, true);
  // The H100 trace (tests/data/h100) shows 2,054 kernels per step less the fused AdamW's 21: 2,033.
  CHECK(step == doctest::Approx(2033).epsilon(0.02));
  // Megatron-LM's fused modules launch one kernel per priced kernel.
  const Workload fused = build_transformer(gpt2_medium());
  CHECK(launches(fused.layers[1], false) == static_cast<double>(fused.layers[1].operators.size()));
}

TEST_CASE("eager PyTorch: Hugging Face's RMSNorm keeps its fp32 input and normalised value")
{
  TransformerShape shape = llama(2, 2048, 8192, 32, 8, 2048);
  shape.flash_attention  = true;
  shape.eager            = true;
  shape.autocast         = true;
  const Workload w       = build_transformer(shape);
  const Operator& norm   = w.layers[1].operators.front();
  CHECK(norm.saved_bytes_per_sample == 8.0 * 2048 * 2048);
  CHECK(norm.launches_forward == 6);
  shape.autocast = false; // a 16-bit model: the fp32 copy of the input, and the 16-bit normalised value
  CHECK(build_transformer(shape).layers[1].operators.front().saved_bytes_per_sample == 6.0 * 2048 * 2048);
}

TEST_CASE("a transformer's blocks are one kind of layer; a block that works differently is its own")
{
  Workload w = build_transformer(gpt2_medium());
  // Names do not count: the blocks' own names differ, and an operator renamed in one block changes nothing.
  REQUIRE(w.layers[5].operators.size() > 1);
  w.layers[5].operators[0].name = "renamed";
  std::vector<int> kinds = layer_kinds(w.layers);
  CHECK(kinds[0] == 0);
  for (int l = 1; l <= 24; ++l)
    CHECK(kinds[l] == 1);
  CHECK(kinds[25] == 25);

  // Any figure of an operator tells kinds apart, one deep in the list as much as the layer's own.
  w.layers[7].operators.back().bytes_per_sample += 1;
  w.layers[9].saved_activation_bytes_per_sample *= 2;
  w.layers[11] = w.layers[7]; // a copy of the changed block, under block 11's name: layer 7's kind
  w.layers[11].name = "block.10";
  kinds = layer_kinds(w.layers);
  CHECK(kinds[7] == 7);
  CHECK(kinds[8] == 1);
  CHECK(kinds[9] == 9);
  CHECK(kinds[11] == 7);
  CHECK(kinds[24] == 1);
}
