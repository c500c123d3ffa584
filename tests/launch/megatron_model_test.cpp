/// The model Megatron-LM builds from an export is the model HetSim simulated: every Hugging Face fixture either
/// goes through Megatron-LM's model arguments and back to the same shape and parameter count, or is refused in
/// one line naming the field Megatron-LM core_v0.13.0 cannot express.

#include "launch/megatron_args.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"
#include "framework_checks.hpp"
#include "models/workload.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(HETSIM_SOURCE_DIR) / "tests/models/data/hf";

/// The export of a plan in bf16 (the dtype every exported model may use) for the model of `config`.
/// Its arguments by flag, each checked against what Megatron-LM core_v0.13.0 accepts.
std::map<std::string, std::string> export_model(const std::string& config)
{
  ExportCase c(1, 1, 16);
  c.workload   = models::load_workload((kFixtures / config).string());
  c.plan.dtype = Dtype::bf16;
  return launched_megatron(c.inputs());
}

int number(const std::map<std::string, std::string>& flags, const std::string& flag, int fallback)
{
  const auto it = flags.find(flag);
  return it == flags.end() ? fallback : std::stoi(it->second);
}

/// The transformer Megatron-LM builds from the model arguments, as HetSim describes one (its defaults where a
/// flag is absent: megatron/training/arguments.py at core_v0.13.0). The vocabulary comes from the tokenizer, not
/// the arguments: it is taken from `original`, and so is where the sparse blocks sit, which the test compares
/// with --moe-layer-freq itself.
models::TransformerShape shape_from(const std::map<std::string, std::string>& flags,
                                    const models::TransformerShape& original)
{
  models::TransformerShape shape;
  shape.family          = original.family;
  shape.vocab           = original.vocab;
  shape.layers          = number(flags, "--num-layers", 0);
  shape.hidden          = number(flags, "--hidden-size", 0);
  shape.intermediate    = number(flags, "--ffn-hidden-size", 4 * shape.hidden);
  shape.heads           = number(flags, "--num-attention-heads", 0);
  shape.kv_heads        = flags.count("--group-query-attention") ? number(flags, "--num-query-groups", 1) : shape.heads;
  shape.head_dim        = number(flags, "--kv-channels", 0);
  shape.seq_len         = number(flags, "--seq-length", 0);
  const bool rope      = flags.count("--position-embedding-type") && flags.at("--position-embedding-type") == "rope";
  shape.max_positions = rope ? 0 : number(flags, "--max-position-embeddings", 0); // else learned_absolute
  shape.gated_mlp       = flags.count("--swiglu") == 1;
  shape.rms_norm        = flags.count("--normalization") && flags.at("--normalization") == "RMSNorm";
  shape.biases          = flags.count("--disable-bias-linear") == 0;
  shape.qkv_bias        = flags.count("--add-qkv-bias") == 1;
  shape.qk_norm         = flags.count("--qk-layernorm") == 1;
  shape.tied_embeddings = flags.count("--untie-embeddings-and-output-weights") == 0;
  if (flags.count("--multi-latent-attention")) {
    shape.q_lora_rank      = number(flags, "--q-lora-rank", 0);
    shape.kv_lora_rank     = number(flags, "--kv-lora-rank", 0);
    shape.qk_nope_head_dim = number(flags, "--qk-head-dim", 0);
    shape.qk_rope_head_dim = number(flags, "--qk-pos-emb-head-dim", 0);
    shape.v_head_dim       = number(flags, "--v-head-dim", 0);
  }
  shape.experts = number(flags, "--num-experts", 0);
  if (shape.experts > 0) {
    shape.experts_per_token          = number(flags, "--moe-router-topk", 2);
    shape.expert_intermediate        = number(flags, "--moe-ffn-hidden-size", shape.intermediate);
    shape.shared_expert_intermediate = number(flags, "--moe-shared-expert-intermediate-size", 0);
    shape.router_bias                = flags.count("--moe-router-enable-expert-bias") == 1;
    shape.first_dense_blocks         = original.first_dense_blocks;
    shape.sparse_step                = original.sparse_step;
  }
  // What the arguments cannot say and the cost model reads: the framework's kernels, as the export assumes.
  shape.flash_attention = original.flash_attention;
  shape.fused_gelu      = original.fused_gelu;
  return shape;
}

} // namespace

TEST_CASE("every Hugging Face fixture round-trips through Megatron-LM's model arguments, or is refused in one line")
{
  // Refused, with the field: what core_v0.13.0's arguments cannot build as simulated.
  const std::map<std::string, std::string> refused = {
      {"bert-base-uncased.json", "model_type: bert"},
      {"gemma-2-9b.json", "hidden_activation: a GeLU-gated MLP (GeGLU)"},
      {"gemma-2b.json", "hidden_activation: a GeLU-gated MLP (GeGLU)"},
      {"gemma-3-1b-it.json", "hidden_activation: a GeLU-gated MLP (GeGLU)"},
      {"olmo-2-1124-7b-instruct.json", "model_type: olmo2's query and key norms span all heads"},
      {"qwen2-moe-57b-a14b.json", "model_type: qwen2_moe's shared-expert gate"},
      {"opt-125m.json", "activation_function: relu"},
      {"pythia-1b.json", "model_type: gpt_neox's attention and MLP run in parallel"},
      {"phi-2.json", "model_type: phi's attention and MLP run in parallel"},
      {"bloom-560m.json", "model_type: bloom's ALiBi positions have no Megatron-LM"},
      {"mpt-7b-instruct.json", "model_type: mpt's ALiBi positions have no Megatron-LM"},
  };
  int round_trips = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kFixtures)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json")
      continue; // SOURCES.md
    CAPTURE(name);
    const models::Workload original = models::load_workload(entry.path().string());
    REQUIRE(original.shape);
    std::map<std::string, std::string> flags;
    try {
      flags = export_model(name);
    } catch (const InputError& e) {
      const std::string message = e.what();
      CAPTURE(message);
      REQUIRE(refused.count(name) == 1);
      CHECK(message.find(refused.at(name)) != std::string::npos);
      CHECK(message.find('\n') == std::string::npos);
      continue;
    }
    CHECK(refused.count(name) == 0);
    const models::TransformerShape& shape   = *original.shape;
    const models::TransformerShape rebuilt  = shape_from(flags, shape);
    CHECK(rebuilt.layers == shape.layers);
    CHECK(rebuilt.hidden == shape.hidden);
    CHECK(rebuilt.heads == shape.heads);
    CHECK(rebuilt.kv_heads == shape.kv_heads);
    CHECK((rebuilt.head_dim > 0 ? rebuilt.head_dim : rebuilt.hidden / rebuilt.heads) ==
          (shape.head_dim > 0 ? shape.head_dim : shape.hidden / shape.heads));
    CHECK(rebuilt.gated_mlp == shape.gated_mlp);
    CHECK(rebuilt.seq_len == shape.seq_len);
    if (shape.mixture_of_experts()) {
      std::string pattern = "[";
      for (int i = 0; i < shape.layers; ++i)
        pattern += std::string(i > 0 ? "," : "") + (shape.sparse_block(i) ? "1" : "0");
      CHECK(flags.at("--moe-layer-freq") == pattern + "]");
    }
    // The same parameters, block by block and in all.
    CHECK(models::build_transformer(rebuilt).total_params() == doctest::Approx(original.total_params()).epsilon(1e-12));
    ++round_trips;
  }
  MESSAGE(round_trips << " fixtures round-trip, " << refused.size() << " refused");
  CHECK(round_trips + static_cast<int>(refused.size()) >= 18);
}

TEST_CASE("the router as the config has it: score function, pre-softmax, group-limited top-k and scaling")
{
  auto v3 = export_model("deepseek-v3.json"); // sigmoid, noaux_tc over 8 groups (top 4), x 2.5
  CHECK(v3["--moe-router-score-function"] == "sigmoid");
  CHECK(v3.count("--moe-router-pre-softmax") == 0);
  CHECK(v3["--moe-router-num-groups"] == "8");
  CHECK(v3["--moe-router-group-topk"] == "4");
  CHECK(v3["--moe-router-topk-scaling-factor"] == "2.5");
  CHECK(v3.count("--moe-router-enable-expert-bias") == 1);
  auto v2 = export_model("deepseek-v2.json"); // softmax without renormalising, group_limited_greedy
  CHECK(v2.count("--moe-router-score-function") == 0);
  CHECK(v2.count("--moe-router-pre-softmax") == 1);
  CHECK(v2["--moe-router-num-groups"] == "8");
  CHECK(v2["--moe-router-group-topk"] == "3");
  CHECK(v2["--moe-router-topk-scaling-factor"] == "16");
  auto mixtral = export_model("mixtral-8x7b.json"); // the top-k's softmax: Megatron-LM's default
  for (const char* flag : {"--moe-router-score-function", "--moe-router-pre-softmax", "--moe-router-num-groups",
                           "--moe-router-topk-scaling-factor"})
    CHECK(mixtral.count(flag) == 0);
}

TEST_CASE("a mixture of experts in fp16 is refused: Megatron-LM runs grouped expert GEMMs in bf16 only")
{
  ExportCase c(1, 1, 16);
  c.workload   = models::load_workload((kFixtures / "mixtral-8x7b.json").string());
  c.plan.dtype = Dtype::fp16;
  CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: dtype: fp16 on a mixture of experts"),
                       InputError);
}
