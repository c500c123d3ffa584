// The attention and loss kernels a model file names change what a step keeps for backward.

#include "models/workload.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace hetsim::models;

namespace {

/// A Llama-style block stack with a 128k vocabulary, where the loss's logits dominate.
nlohmann::json llama(const std::string& extra_key = "", const std::string& extra_value = "")
{
  nlohmann::json config = {{"model_type", "llama"},         {"hidden_size", 1024},      {"intermediate_size", 2816},
                           {"num_attention_heads", 8},     {"num_key_value_heads", 8}, {"num_hidden_layers", 2},
                           {"vocab_size", 128256},         {"seq_len", 1024},          {"max_position_embeddings", 4096}};
  if (!extra_key.empty())
    config[extra_key] = extra_value;
  return config;
}

double head_saved(const Workload& workload)
{
  return workload.layers.back().saved_activation_bytes_per_sample;
}

double head_transient(const Workload& workload)
{
  return workload.layers.back().transient_bytes_per_sample;
}

} // namespace

TEST_CASE("a fused loss keeps no fp32 logits, a fused linear loss no logits at all")
{
  const Workload eager        = with_modules(workload_from_json(llama("loss", "eager"), "m.json"), true, false);
  const Workload megatron     = workload_from_json(llama("loss", "megatron"), "m.json");
  const Workload fused        = with_modules(workload_from_json(llama("loss", "fused"), "m.json"), true, false);
  const Workload fused_linear = with_modules(workload_from_json(llama("loss", "fused_linear"), "m.json"), true, false);
  const double sv             = 1024.0 * 128256;
  // Hugging Face's upcast keeps 4 bytes a logit and 8 more in backward; flash-attn's kernel 2 and 2.
  CHECK(head_saved(eager) - head_saved(fused) == doctest::Approx(2 * sv - 4 * 1024).epsilon(1e-9));
  CHECK(head_transient(eager) >= 8 * sv);
  CHECK(head_transient(fused) == doctest::Approx(2 * sv));
  const Workload fused_modules = workload_from_json(llama("loss", "fused"), "m.json"); // Megatron-LM's modules
  CHECK(head_saved(megatron) - head_saved(fused_modules) == doctest::Approx(2 * sv - 4 * 1024).epsilon(1e-9));
  // Liger's chunks: nothing the size of the logits kept, one chunk of 4sh alive.
  CHECK(head_saved(fused_linear) < 0.1 * sv); // the norm's and the product's inputs, of the width h
  CHECK(head_transient(fused_linear) < 0.05 * sv);
  // The framework's default: Hugging Face's loss under its modules.
  const Workload unnamed = with_modules(workload_from_json(llama(), "m.json"), true, false);
  CHECK(head_saved(unnamed) == head_saved(eager));
}

TEST_CASE("an attention kernel that keeps the scores has no fused operator, and the plan's choice wins")
{
  auto has_fused = [](const Workload& w) {
    for (const Layer& layer : w.layers)
      for (const Operator& op : layer.operators)
        if (op.kind == OperatorKind::fused_attention)
          return true;
    return false;
  };
  const Workload eager = workload_from_json(llama("attention", "eager"), "m.json");
  CHECK_FALSE(eager.shape->flash_attention);
  CHECK_FALSE(has_fused(eager));
  const Workload flash = workload_from_json(llama("attention", "flash2"), "m.json");
  CHECK(has_fused(flash));
  CHECK(flash.layers[1].saved_activation_bytes_per_sample < eager.layers[1].saved_activation_bytes_per_sample);
  // A plan's choice over the file's: keeping scores brings the s x s terms back.
  const Workload overridden = with_attention(flash, AttentionKernel::eager, "plan framework.attention");
  CHECK_FALSE(has_fused(overridden));
  CHECK(overridden.layers[1].saved_activation_bytes_per_sample == eager.layers[1].saved_activation_bytes_per_sample);
}

TEST_CASE("an unknown kernel name is one line naming the field and the choices")
{
  CHECK_THROWS_WITH_AS(workload_from_json(llama("attention", "flash4"), "m.json"),
                       doctest::Contains("m.json: attention: expected one of default, sdpa, flash2, flash3"),
                       hetsim::InputError);
  CHECK_THROWS_WITH_AS(workload_from_json(llama("loss", "chunked"), "m.json"),
                       doctest::Contains("m.json: loss: expected one of default, eager, megatron, fused, fused_linear"),
                       hetsim::InputError);
  nlohmann::json both = llama("attention", "flash2");
  both["flash_attention"] = true;
  CHECK_THROWS_WITH_AS(workload_from_json(both, "m.json"), doctest::Contains("m.json: flash_attention: expected no"),
                       hetsim::InputError);
}
