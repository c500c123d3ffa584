#include "models/operator.hpp"

#include "models/transformer.hpp"
#include "models/workload.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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
