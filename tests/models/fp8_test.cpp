// FP8 training as Transformer Engine runs it (models/fp8.hpp): which products run in fp8, what their
// quantizations move, and what they keep.

#include "models/fp8.hpp"

#include "core/error.hpp"
#include "models/workload.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace hetsim::models;

namespace {

const std::string kHf = std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/";

const Operator& op_of(const Workload& workload, const std::string& layer, const std::string& name)
{
  for (const Layer& l : workload.layers)
    if (l.name == layer)
      for (const Operator& op : l.operators)
        if (op.name == name)
          return op;
  FAIL("no operator " << name << " in " << layer);
  throw;
}

} // namespace

TEST_CASE("fp8 runs a block's linear products, not its attention, router, embedding or output layer")
{
  const Workload bf16 = load_workload(kHf + "llama-3-8b.json");
  const Workload fp8  = with_fp8(bf16, Fp8Recipe::delayed, "plan dtype");
  for (const char* name : {"qkv", "attention_output", "mlp_gate", "mlp_up", "mlp_down"}) {
    CAPTURE(std::string(name));
    const Operator& op = op_of(fp8, "block.0", name);
    CHECK(op.fp8);
    // The input before the forward product, the output gradient before the backward's: a 16-bit read and two
    // fp8 writes an element.
    CHECK(op.quantize_bytes_per_sample == doctest::Approx(4 * op.m * op.k));
    CHECK(op.quantize_backward_bytes_per_sample == doctest::Approx(4 * op.m * op.n));
    CHECK_FALSE(op_of(bf16, "block.0", name).fp8);
  }
  for (const Layer& layer : fp8.layers)
    for (const Operator& op : layer.operators)
      if (op.kind != OperatorKind::linear)
        CHECK_FALSE(op.fp8);
  CHECK_FALSE(op_of(fp8, "head", "logits").fp8);
  // What a block keeps shrinks by a byte per element of each product's 16-bit input it saved, but the fused
  // attention kernel keeps its output, the output projection's input, for its backward: the fp8 copy is kept
  // beside it.
  CHECK(fp8.layers[1].saved_activation_bytes_per_sample < bf16.layers[1].saved_activation_bytes_per_sample);
  CHECK(op_of(fp8, "block.0", "mlp_down").saved_bytes_per_sample ==
        doctest::Approx(op_of(bf16, "block.0", "mlp_down").saved_bytes_per_sample / 2));
  REQUIRE(op_of(fp8, "block.0", "flash_attention").kind == OperatorKind::fused_attention);
  CHECK(op_of(fp8, "block.0", "attention_output").saved_bytes_per_sample ==
        doctest::Approx(op_of(bf16, "block.0", "attention_output").saved_bytes_per_sample * 1.5));
  // Nothing else moves: the parameters and FLOPs are the model's.
  CHECK(fp8.total_params() == bf16.total_params());
  CHECK(fp8.layers[1].forward_flops_per_sample == bf16.layers[1].forward_flops_per_sample);
}

TEST_CASE("each fp8 recipe's quantization moves what its scales need")
{
  CHECK(fp8_quantize_bytes_per_element(Fp8Recipe::none) == 0);
  // This step's amax reads the tensor once more than a delayed scale's history does.
  CHECK(fp8_quantize_bytes_per_element(Fp8Recipe::tensorwise) == fp8_quantize_bytes_per_element(Fp8Recipe::delayed) + 2);
  CHECK(fp8_quantize_bytes_per_element(Fp8Recipe::mxfp8) > fp8_quantize_bytes_per_element(Fp8Recipe::delayed));
  CHECK(parse_fp8_recipe("mxfp8") == Fp8Recipe::mxfp8);
  CHECK_FALSE(parse_fp8_recipe("e4m3").has_value());
}

TEST_CASE("the router of a mixture of experts stays in 16 bits; its experts' products run in fp8")
{
  const Workload moe = with_fp8(load_workload(kHf + "mixtral-8x7b.json"), Fp8Recipe::blockwise, "plan dtype");
  bool router = false, experts = false;
  for (const Operator& op : moe.layers[1].operators) {
    if (op.name == "router") {
      router = true;
      CHECK_FALSE(op.fp8);
    }
    if (op.experts > 0 && op.kind == OperatorKind::linear) {
      experts = true;
      CHECK(op.fp8);
    }
  }
  CHECK(router);
  CHECK(experts);
}

TEST_CASE("a layer list has no products to run in fp8")
{
  Workload list;
  list.name = "figures";
  list.layers.push_back(Layer{});
  CHECK(with_fp8(list, Fp8Recipe::none, "plan dtype").layers.size() == 1);
  CHECK_THROWS_WITH_AS(with_fp8(list, Fp8Recipe::delayed, "p.json: dtype"),
                       "p.json: dtype: the model 'figures' is a layer list, whose products are figures, not "
                       "operators; give it a Hugging Face config to train in fp8",
                       hetsim::InputError);
}
