#include "models/operator.hpp"

#include "models/transformer.hpp"
#include "models/workload.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>

using namespace hetsim::models;

namespace {

TransformerShape gpt(bool flash)
{
  TransformerShape s = testing::gpt_shape(2);
  s.flash_attention   = flash;
  return s;
}

const Operator* find(const Layer& layer, const std::string& name)
{
  auto it = std::find_if(layer.operators.begin(), layer.operators.end(),
                         [&](const Operator& op) { return op.name == name; });
  return it == layer.operators.end() ? nullptr : &*it;
}

} // namespace

TEST_CASE("a block's figures are the sums over its operators")
{
  const Workload w   = build_transformer(gpt(false));
  const Layer& block = w.layers[1];
  double params = 0, flops = 0, saved = 0;
  for (const Operator& op : block.operators) {
    params += op.params;
    flops += op.flops_per_sample();
    saved += op.saved_bytes_per_sample;
  }
  CHECK(block.params == doctest::Approx(params));
  CHECK(block.forward_flops_per_sample == doctest::Approx(flops));
  CHECK(block.backward_flops_per_sample == doctest::Approx(2 * flops));
  CHECK(block.saved_activation_bytes_per_sample == doctest::Approx(saved));
  // Korthikanti et al. eq. 1: sbh(34 + 5as/h).
  const double s = 1024, h = 1024, a = 16;
  CHECK(saved == doctest::Approx(s * h * (34 + 5 * a * s / h)));
  // Two row-split products close the two halves: Megatron's two all-reduces per forward.
  CHECK(block.tensor_parallel_all_reduces == 2);
  CHECK(find(block, "attention_output")->split == TensorSplit::rows);
  CHECK(find(block, "mlp_down")->split == TensorSplit::rows);
  CHECK(find(block, "qkv")->split == TensorSplit::columns);
  CHECK(find(block, "norm_1")->split == TensorSplit::replicated);
  // The vocabulary-parallel lookup is the embedding's all-reduce; the head has none.
  CHECK(w.layers.front().tensor_parallel_all_reduces == 1);
  CHECK(w.layers.back().tensor_parallel_all_reduces == 0);
}

TEST_CASE("flash attention replaces the s x s kernels by one that keeps no score matrix")
{
  const Layer plain = build_transformer(gpt(false)).layers[1];
  const Layer flash = build_transformer(gpt(true)).layers[1];
  CHECK(find(plain, "softmax") != nullptr);
  CHECK(find(plain, "attention_scores")->kind == OperatorKind::batched_matmul);
  CHECK(find(flash, "softmax") == nullptr);
  CHECK(find(flash, "flash_attention")->kind == OperatorKind::fused_attention);
  CHECK(flash.forward_flops_per_sample == doctest::Approx(plain.forward_flops_per_sample));
  CHECK(flash.saved_activation_bytes_per_sample < plain.saved_activation_bytes_per_sample / 2);
  CHECK(flash.operators.size() < plain.operators.size());
}

TEST_CASE("kernels: a product's backward launches its input and weight gradients")
{
  const Layer block = build_transformer(gpt(false)).layers[1];
  const Operator& qkv = *find(block, "qkv");
  CHECK(operator_kernels(qkv, 1, 2, false).size() == 1);
  const std::vector<Kernel> backward = operator_kernels(qkv, 2, 2, true);
  REQUIRE(backward.size() == 2);
  // Column-parallel: each member computes n / 2 outputs over all k inputs, for 2 sequences' tokens.
  CHECK(backward[0].name == "qkv.dgrad");
  CHECK(backward[0].m == doctest::Approx(2 * qkv.m));
  CHECK(backward[0].n == doctest::Approx(qkv.k));
  CHECK(backward[0].k == doctest::Approx(qkv.n / 2));
  CHECK(backward[1].m == doctest::Approx(qkv.k));
  CHECK(backward[1].n == doctest::Approx(qkv.n / 2));
  CHECK(backward[1].k == doctest::Approx(2 * qkv.m));
  // Together the two gradients cost twice the forward's FLOPs.
  CHECK(backward[0].flops + backward[1].flops ==
        doctest::Approx(2 * operator_kernels(qkv, 2, 2, false)[0].flops));
  CHECK(operator_kernels(*find(block, "softmax"), 1, 1, true).size() == 1);
}

TEST_CASE("torchtitan's op-level selective recompute keeps every other product and the attention kernel")
{
  // Llama 3.1 8B's block at 8,192 tokens as eager PyTorch runs it: q, k, v (one operator, three calls), o, gate,
  // up, down are its seven products, in that order.
  std::ifstream file(std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/llama-3.1-8b.json");
  nlohmann::json config = nlohmann::json::parse(file);
  config["seq_len"]     = 8192;
  config["attention"]   = "sdpa";
  const Workload core = with_modules(workload_from_json(config, "llama-3.1-8b.json"), true, false);
  const Workload op   = with_selective_policy(core, SelectivePolicy::every_other_product);
  const Layer& block  = op.layers[1];
  REQUIRE(block.kind == "transformer");
  const double s = 8192, h = 4096, kv = 1024, ffn = 14336, heads = 32;
  std::vector<std::string> whole, partly, rerun_products;
  for (const Operator& o : block.operators) {
    if (!o.selectively_recomputed)
      whole.push_back(o.name);
    else if (o.selective_rerun_width > 0)
      partly.push_back(o.name);
    else if (o.kind == OperatorKind::linear)
      rerun_products.push_back(o.name);
  }
  // Kept whole: the attention kernel, gate (5th) and down (7th); q and v (1st, 3rd) of the q/k/v operator,
  // whose k (2nd) is rerun; o (4th) and up (6th) rerun.
  CHECK(whole == std::vector<std::string>{"flash_attention", "mlp_gate", "mlp_down"});
  CHECK(partly == std::vector<std::string>{"qkv"});
  CHECK(rerun_products == std::vector<std::string>{"attention_output", "mlp_up"});
  // What the block holds: its input, the outputs of q, v, gate and down, the context and its fp32 log-sum-exp.
  CHECK(block.selective_saved_bytes_per_sample ==
        doctest::Approx(2 * s * h + 2 * s * (h + kv + ffn + h) + 2 * s * h + 4 * s * heads));
  // About a third of what it holds without recompute.
  CHECK(block.selective_saved_bytes_per_sample < 0.4 * block.saved_activation_bytes_per_sample);
  // Its backward reruns k, o and up: 2 s h (kv + h + ffn) FLOPs (and the elementwise operators around them).
  CHECK(block.selective_recompute_flops_per_sample == doctest::Approx(2 * s * h * (kv + h + ffn)));
  // Megatron's policy on the same block: a flash kernel leaves nothing to rerun and keeps everything.
  CHECK(core.layers[1].selective_recompute_flops_per_sample == 0);
  CHECK(core.layers[1].selective_saved_bytes_per_sample == core.layers[1].saved_activation_bytes_per_sample);
}

TEST_CASE("torchtitan's policy counts only aten.mm: a product with a bias is addmm, rerun")
{
  // GPT-2's Conv1D products all carry a bias (torch.addmm): under the op-level policy only its attention kernel
  // keeps its output.
  auto shape            = testing::gpt_shape(2, 768, 12, 50257, 1024);
  shape.eager           = true;
  shape.flash_attention = true;
  shape.selective       = SelectivePolicy::every_other_product;
  const Workload gpt2 = build_transformer(shape);
  std::vector<std::string> kept;
  for (const Operator& o : gpt2.layers[1].operators)
    if (!o.selectively_recomputed)
      kept.push_back(o.name);
  CHECK(kept == std::vector<std::string>{"flash_attention"});
}
