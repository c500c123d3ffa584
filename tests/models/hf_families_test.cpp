/// Published Hugging Face config.json files of the families HetSim reads (tests/models/data/hf, sources in its
/// SOURCES.md): each model's parameter count within 1% of its published size, mixture-of-experts models with
/// their experts (total and active parameters).

#include "models/workload.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>

using namespace hetsim::models;

namespace {

std::string fixture(const std::string& name)
{
  return std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/" + name;
}

struct Published {
  const char* file;
  double params; ///< published total (SOURCES.md)
};

} // namespace

TEST_CASE("every family's parameter count is within 1% of the published size")
{
  const Published models[] = {
      {"llama-2-7b.json", 6'738'415'616},   {"llama-3-8b.json", 8'030'261'248},
      {"llama-3.1-8b.json", 8'030'261'248}, {"llama-3.2-1b.json", 1'235'814'400},
      {"mistral-7b.json", 7'241'732'096},   {"qwen2-7b.json", 7'615'616'512},
      {"gemma-2-9b.json", 9'241'705'984},   {"phi-3-mini.json", 3'821'079'552},
      {"gpt2.json", 124'439'808},           {"gpt2-medium.json", 354'823'168},
      {"bert-base-uncased.json", 109'482'240}, {"gemma-2b.json", 2'506'172'416},
      {"pythia-1b.json", 1'011'781'632},      {"opt-125m.json", 125'239'296},
      {"qwen3-8b.json", 8'190'735'360},     {"smollm3-3b.json", 3'075'098'624},
      {"granite-3.3-8b-instruct.json", 8'170'864'640}, {"gemma-3-1b-it.json", 999'885'952},
      {"olmo-2-1124-7b-instruct.json", 7'298'617'344}, {"phi-2.json", 2'779'683'840},
  };
  for (const Published& model : models) {
    CAPTURE(model.file);
    const Workload workload = load_workload(fixture(model.file));
    CHECK(workload.total_params() == doctest::Approx(model.params).epsilon(0.01));
  }
}

TEST_CASE("what a config leaves unsaid is said: the sequence length, flash attention, a shorter sliding window")
{
  const Workload llama = load_workload(fixture("llama-3.2-1b.json"));
  CHECK(llama.seq_len == 131072);
  REQUIRE(llama.assumptions.size() == 2);
  CHECK(llama.assumptions[0].find("llama-3.2-1b.json: attention not given: the framework's fused kernel") !=
        std::string::npos);
  CHECK(llama.assumptions[1].find("seq_len not given: training at the model's maximum of 131072") !=
        std::string::npos);
  const Workload shorter = with_seq_len(llama, 4096, "--seq-len");
  CHECK(shorter.seq_len == 4096);
  CHECK(shorter.assumptions.size() == 1);
  CHECK(shorter.total_params() == llama.total_params());
  CHECK(shorter.forward_flops_per_sample() < llama.forward_flops_per_sample() / 30);

  const Workload mistral = load_workload(fixture("mistral-7b.json"));
  bool window_said = false;
  for (const auto& line : mistral.assumptions)
    window_said = window_said || line.find("sliding_window 4096 is shorter than seq_len 32768") != std::string::npos;
  CHECK(window_said);
}

TEST_CASE("mixture-of-experts configs count every expert, and a token meets only its top-k")
{
  // Mixtral-8x7B: 46.7 B total, 12.9 B active (Mistral AI); the exact integers are derived in SOURCES.md.
  const Workload mixtral = load_workload(fixture("mixtral-8x7b.json"));
  CHECK(mixtral.total_params() == doctest::Approx(46'702'792'704.0).epsilon(1e-9));
  CHECK(mixtral.active_params() == doctest::Approx(12'879'925'248.0).epsilon(1e-9));
  CHECK(mixtral.mixture_of_experts());
  // Qwen2-57B-A14B: 57 B total, 14 B active by its name (a shared expert and 8 of 64 routed ones per token).
  const Workload qwen = load_workload(fixture("qwen2-moe-57b-a14b.json"));
  CHECK(qwen.total_params() == doctest::Approx(57e9).epsilon(0.01));
  CHECK(qwen.active_params() == doctest::Approx(14e9).epsilon(0.02));
  CHECK(qwen.total_params() == doctest::Approx(57'408'658'944.0).epsilon(1e-9));
  // A dense model's active parameters are all of them.
  const Workload mistral = load_workload(fixture("mistral-7b.json"));
  CHECK_FALSE(mistral.mixture_of_experts());
  CHECK(mistral.active_params() == mistral.total_params());
}

TEST_CASE("a sparse block's FLOPs are those of its top-k experts: Mixtral's 2 of 8 cost about two dense MLPs")
{
  const Workload mixtral = load_workload(fixture("mixtral-8x7b.json"));
  const Workload mistral = load_workload(fixture("mistral-7b.json")); // the same attention and expert shape
  REQUIRE(mixtral.seq_len == mistral.seq_len);
  const double s    = mixtral.seq_len;
  const auto& moe   = mixtral.layers[1];
  const auto& dense = mistral.layers[1];
  // Two experts' SwiGLU MLPs against the dense block's one, and the router's s x h x 8 product.
  const double mlp = 2 * s * 3 * 4096.0 * 14336.0;
  CHECK(moe.forward_flops_per_sample - dense.forward_flops_per_sample ==
        doctest::Approx(mlp + 2 * s * 4096.0 * 8).epsilon(1e-9));
  CHECK(moe.all_to_alls == 2);
  CHECK(moe.expert_params == doctest::Approx(8 * 3 * 4096.0 * 14336.0));
}

TEST_CASE("a capacity factor pads the experts' products, which run but do not count as the model's FLOPs")
{
  std::ifstream file(fixture("mixtral-8x7b.json"));
  nlohmann::json config       = nlohmann::json::parse(file);
  config["capacity_factor"]   = 1.0;
  const Workload balanced     = workload_from_json(config, "mixtral.json");
  config["capacity_factor"]   = 1.25;
  const Workload padded       = workload_from_json(config, "mixtral.json");
  const double s              = balanced.seq_len;
  // A quarter more rows for the products of each token's 2 experts (three h x 14,336 SwiGLU matrices) in each
  // of the 32 sparse blocks, forward and backward (twice the forward).
  const double padding = 0.25 * 32 * 3 * (2 * s * 2 * 3 * 4096.0 * 14336.0);
  CHECK(padded.forward_flops_per_sample() + padded.backward_flops_per_sample() -
            (balanced.forward_flops_per_sample() + balanced.backward_flops_per_sample()) ==
        doctest::Approx(padding).epsilon(1e-9));
  CHECK(padded.model_flops_per_sample() == doctest::Approx(balanced.model_flops_per_sample()).epsilon(1e-12));
  CHECK(balanced.model_flops_per_sample() ==
        balanced.forward_flops_per_sample() + balanced.backward_flops_per_sample());
}

TEST_CASE("torch_dtype is the model's dtype: the published configs' own, kept through --seq-len")
{
  const struct {
    const char* file;
    std::optional<hetsim::Dtype> dtype;
  } models[] = {{"llama-3-8b.json", hetsim::Dtype::bf16},
                {"llama-2-7b.json", hetsim::Dtype::fp16},
                {"gemma-2-9b.json", hetsim::Dtype::fp32},
                {"gpt2.json", std::nullopt}};
  for (const auto& model : models) {
    CAPTURE(model.file);
    const Workload workload = load_workload(fixture(model.file));
    CHECK(workload.dtype == model.dtype);
    CHECK(workload.default_dtype() == model.dtype.value_or(hetsim::Dtype::fp16));
    if (model.dtype)
      CHECK(workload.dtype_origin == fixture(model.file) + ": torch_dtype");
    bool fp32_said = false; // training in fp32 because the file says so is said on stderr
    for (const auto& line : workload.assumptions)
      fp32_said = fp32_said || line.find("torch_dtype float32: plans, searches and profiles") != std::string::npos;
    CHECK(fp32_said == (model.dtype == hetsim::Dtype::fp32));
    CHECK(with_seq_len(workload, 512, "--seq-len").dtype == model.dtype);
  }
}

TEST_CASE("DeepSeek-V2-Lite, V2 and V3: multi-head latent attention and DeepSeekMoE count exactly")
{
  // The published exact totals (tests/models/data/hf/SOURCES.md): checkpoint loads and model cards.
  const Workload v3 = load_workload(fixture("deepseek-v3.json"));
  CHECK(v3.total_params() == doctest::Approx(671'026'419'200.0).epsilon(1e-12));
  CHECK(v3.active_params() == doctest::Approx(37e9).epsilon(0.02)); // 37 B activated (with the input embedding)
  const Workload v2 = load_workload(fixture("deepseek-v2.json"));
  CHECK(v2.total_params() == doctest::Approx(235'741'434'880.0).epsilon(1e-12));
  CHECK(v2.active_params() == doctest::Approx(21e9).epsilon(0.02));
  // V2-Lite's shape values (every copy agrees; no verbatim config.json was found): no query low-rank projection.
  const nlohmann::json lite = {{"model_type", "deepseek_v2"},      {"hidden_size", 2048},
                               {"num_hidden_layers", 27},          {"num_attention_heads", 16},
                               {"num_key_value_heads", 16},        {"q_lora_rank", nullptr},
                               {"kv_lora_rank", 512},              {"qk_nope_head_dim", 128},
                               {"qk_rope_head_dim", 64},           {"v_head_dim", 128},
                               {"intermediate_size", 10944},       {"moe_intermediate_size", 1408},
                               {"n_routed_experts", 64},           {"n_shared_experts", 2},
                               {"num_experts_per_tok", 6},         {"first_k_dense_replace", 1},
                               {"moe_layer_freq", 1},              {"vocab_size", 102400},
                               {"tie_word_embeddings", false},     {"attention_bias", false},
                               {"max_position_embeddings", 163840}, {"seq_len", 4096}};
  const Workload v2_lite = workload_from_json(lite, "deepseek-v2-lite.json");
  CHECK(v2_lite.total_params() == doctest::Approx(15'706'484'224.0).epsilon(1e-12));
  // The first block is dense; the rest route each token to 6 of 64 experts beside 2 shared ones.
  CHECK(v2_lite.layers[1].expert_params == 0);
  CHECK(v2_lite.layers[2].expert_params == doctest::Approx(64 * 3 * 2048.0 * 1408));
  CHECK(v2_lite.layers[2].all_to_alls == 2);
  // The multi-token prediction module is said, not silently dropped.
  CHECK(std::any_of(v3.assumptions.begin(), v3.assumptions.end(), [](const std::string& line) {
    return line.find("num_nextn_predict_layers 1: the multi-token prediction module is not modelled") !=
           std::string::npos;
  }));
}

TEST_CASE("Falcon-7B: multi-query attention and a parallel block with one shared norm count exactly")
{
  // tiiuae/falcon-7b's config.json values (model card; no verbatim copy of its model_type "falcon" form was found,
  // SOURCES.md). Per block: QKV 4544 x (4544 + 2 x 64) (one key-value head of 64), output 4544², MLP 2 x 4544 x
  // 18176, one LayerNorm of 2 x 4544: 207,070,080; x 32, plus the tied 65,024 x 4544 embedding and the final
  // LayerNorm: 6,921,720,704 (the card's "7B").
  const nlohmann::json falcon = {{"model_type", "falcon"},       {"hidden_size", 4544},
                                 {"num_hidden_layers", 32},      {"num_attention_heads", 71},
                                 {"multi_query", true},          {"parallel_attn", true},
                                 {"new_decoder_architecture", false}, {"bias", false},
                                 {"alibi", false},               {"vocab_size", 65024},
                                 {"torch_dtype", "bfloat16"},    {"seq_len", 2048}};
  const Workload workload = workload_from_json(falcon, "falcon-7b.json");
  CHECK(workload.total_params() == doctest::Approx(6'921'720'704.0).epsilon(1e-12));
  CHECK(workload.layers[1].params == doctest::Approx(207'070'080.0).epsilon(1e-12));
}

TEST_CASE("rotary positions as each family's config gives them")
{
  const Workload llama = load_workload(fixture("llama-3.2-1b.json"));
  REQUIRE(llama.shape);
  CHECK(llama.shape->rope_base == 500000);
  CHECK(llama.shape->rope_scaling == "llama3");
  CHECK(llama.shape->rope_scaling_factor == 32);
  CHECK(llama.shape->rotary_percent == 1);
  const Workload pythia = load_workload(fixture("pythia-1b.json"));
  REQUIRE(pythia.shape);
  CHECK(pythia.shape->rotary_percent == 0.25); // rotary_pct, GPTNeoXConfig's default too
  CHECK(pythia.shape->rope_scaling.empty());
}

TEST_CASE("MPT as Hugging Face's MptModel runs it: ALiBi, no biases, one Wqkv module, eager attention")
{
  const Workload mpt = load_workload(fixture("mpt-7b-instruct.json"));
  REQUIRE(mpt.shape.has_value());
  CHECK(mpt.shape->alibi);
  CHECK_FALSE(mpt.shape->rotary());
  CHECK_FALSE(mpt.shape->biases);
  CHECK(mpt.shape->intermediate == 4 * 4096);
  CHECK(mpt.seq_len == 2048);
  // 32 blocks of 12 x 4096^2 weights and two bias-free norms, the tied 50,432-row embedding, the final norm.
  CHECK(mpt.total_params() == doctest::Approx(6'649'286'656).epsilon(1e-6));
  // No rotation and no position table; the eager scores take the ALiBi bias in one more pass.
  bool rotary = false, alibi = false, fused = false;
  for (const Layer& layer : mpt.layers)
    for (const Operator& op : layer.operators) {
      rotary = rotary || op.name == "rotary";
      alibi  = alibi || op.name == "alibi_bias";
      fused  = fused || op.kind == OperatorKind::fused_attention;
    }
  CHECK_FALSE(rotary);
  CHECK(alibi == mpt.shape->eager);
  CHECK_FALSE(fused); // MptAttention keeps its scores
}

TEST_CASE("MPT's attn_impl says which kernel MosaicML's training code runs")
{
  nlohmann::json config = nlohmann::json::parse(std::ifstream(fixture("mpt-7b-instruct.json")));
  config["attn_config"]["attn_impl"] = "triton";
  const Workload triton = workload_from_json(config, "mpt.json");
  CHECK(triton.shape->attention == AttentionKernel::triton);
  CHECK(triton.shape->flash_attention); // a fused kernel: no scores kept
  config["attn_config"]["attn_impl"] = "flash";
  CHECK(workload_from_json(config, "mpt.json").shape->attention == AttentionKernel::flash2);
  config["attention"] = "eager"; // the file's own choice wins
  CHECK_FALSE(workload_from_json(config, "mpt.json").shape->flash_attention);
}

TEST_CASE("MPT's options Hugging Face's MptModel does not have are refused in one line")
{
  const std::string text = R"({"model_type": "mpt", "d_model": 1024, "n_heads": 16, "n_layers": 4,
    "vocab_size": 50432, "attn_config": {"alibi": false}})";
  CHECK_THROWS_WITH_AS(workload_from_json(nlohmann::json::parse(text), "mpt.json"),
                       "mpt.json: attn_config.alibi: expected true (Hugging Face's MptModel has ALiBi positions only), "
                       "got boolean",
                       hetsim::InputError);
}

TEST_CASE("Qwen3 and Qwen3-MoE: a norm on each head's queries and keys, a head width of its own, no shared expert")
{
  // Qwen3-8B: 4,096 wide but 32 heads of 128 and 8 key-value heads; q_norm and k_norm of 128 each per block.
  const Workload qwen3 = load_workload(fixture("qwen3-8b.json"));
  REQUIRE(qwen3.shape);
  CHECK(qwen3.shape->qk_norm);
  CHECK(qwen3.shape->head_width() == 128);
  const auto& block = qwen3.layers[1].operators;
  const auto norm = std::find_if(block.begin(), block.end(), [](const Operator& op) { return op.name == "qk_norm"; });
  REQUIRE(norm != block.end());
  CHECK(norm->params == 256);
  // The model card's 6.95B without the embeddings: 36 blocks of 192,946,432 and the final norm.
  CHECK(qwen3.total_params() - 2 * 151936.0 * 4096 == doctest::Approx(6'946'075'648.0).epsilon(1e-12));
  // Qwen3-30B-A3B: 128 experts of 768, eight a token, every block sparse; the card's 30.5B total, 3.3B active.
  const Workload moe = load_workload(fixture("qwen3-30b-a3b.json"));
  REQUIRE(moe.shape);
  CHECK(moe.shape->experts == 128);
  CHECK(moe.shape->experts_per_token == 8);
  CHECK(moe.shape->shared_expert_intermediate == 0);
  CHECK(moe.total_params() == doctest::Approx(30.5e9).epsilon(0.01));
  CHECK(moe.active_params() == doctest::Approx(3.3e9).epsilon(0.02));
}

TEST_CASE("Gemma 3's text model: Gemma-2's four norms per block and a norm on each head's queries and keys")
{
  // The Gemma 3 report's 1B: 302M embedding and 698M other parameters; 26 blocks of 26,842,112 here.
  const Workload gemma3 = load_workload(fixture("gemma-3-1b-it.json"));
  REQUIRE(gemma3.shape);
  CHECK(gemma3.shape->qk_norm);
  CHECK(gemma3.shape->sandwich_norms);
  CHECK(gemma3.shape->tied_embeddings);
  CHECK(gemma3.shape->head_width() == 256);
  CHECK(gemma3.total_params() == doctest::Approx(262144.0 * 1152 + 26 * 26'842'112.0 + 1152).epsilon(1e-12));
}

TEST_CASE("Phi-2: one shared LayerNorm under parallel attention and MLP, biases everywhere, 40% of each head rotated")
{
  const Workload phi = load_workload(fixture("phi-2.json"));
  REQUIRE(phi.shape);
  CHECK(phi.shape->parallel_residual);
  CHECK(phi.shape->shared_block_norm);
  CHECK(phi.shape->rotary_percent == doctest::Approx(0.4));
  // As published, with the output projection's 51,200 biases.
  CHECK(phi.shape->logits_bias);
  CHECK(phi.total_params() == doctest::Approx(2'779'683'840.0).epsilon(1e-12));
}

TEST_CASE("Llama's attention_bias and mlp_bias each bias their own projections")
{
  nlohmann::json config = nlohmann::json::parse(std::ifstream(fixture("llama-3.2-1b.json")));
  const double plain    = workload_from_json(config, "llama.json").total_params();
  const double blocks = 16, hidden = 2048, kv = 512, mlp = 8192;
  config["mlp_bias"] = true; // gate, up and down
  CHECK(workload_from_json(config, "llama.json").total_params() - plain == blocks * (2 * mlp + hidden));
  config["mlp_bias"]       = false;
  config["attention_bias"] = true; // q, k, v and o_proj
  CHECK(workload_from_json(config, "llama.json").total_params() - plain == blocks * (2 * hidden + 2 * kv));
}

TEST_CASE("GPT-J: parallel attention and MLP off one norm, biases on the MLP and the untied head only")
{
  // GPT-J-6B's model card values (no verbatim config.json found: SOURCES.md).
  const Workload gptj = workload_from_json(nlohmann::json::parse(R"({"model_type": "gptj", "n_embd": 4096,
    "n_layer": 28, "n_head": 16, "n_positions": 2048, "rotary_dim": 64, "vocab_size": 50400,
    "activation_function": "gelu_new", "tie_word_embeddings": false})"), "gpt-j-6b.json");
  REQUIRE(gptj.shape);
  CHECK(gptj.shape->parallel_residual);
  CHECK(gptj.shape->shared_block_norm);
  CHECK_FALSE(gptj.shape->biases);
  CHECK(gptj.shape->mlp_bias);
  CHECK(gptj.shape->logits_bias);
  CHECK(gptj.shape->rotary_percent == doctest::Approx(64.0 / 256)); // rotary_dim of a head of 256
  CHECK(gptj.shape->gelu_as_modules);                              // gelu_new
  // GPTJForCausalLM's modules: 28 blocks of 4 x 4096^2 attention, fc_in and fc_out with biases and ln_1; the
  // embedding, ln_f and the head of 50,400 rows with its bias.
  const double h = 4096, v = 50400, block = 4 * h * h + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * h;
  CHECK(gptj.total_params() == doctest::Approx(v * h + 28 * block + 2 * h + v * h + v).epsilon(1e-12));
  CHECK(gptj.total_params() == doctest::Approx(6'053'381'344.0).epsilon(0.001)); // the model card's count
}

TEST_CASE("BLOOM: ALiBi in the scores' product, a norm on the embeddings, biases everywhere, eager attention")
{
  const Workload bloom = load_workload(fixture("bloom-560m.json"));
  REQUIRE(bloom.shape);
  CHECK(bloom.shape->alibi);
  CHECK(bloom.shape->embedding_norm);
  CHECK(bloom.shape->biases);
  CHECK_FALSE(bloom.shape->flash_attention);
  CHECK(bloom.shape->intermediate == 4 * 1024);
  CHECK(bloom.total_params() == doctest::Approx(559'214'592.0).epsilon(1e-12));
  const auto& embedding = bloom.layers.front().operators;
  CHECK(std::any_of(embedding.begin(), embedding.end(), [](const Operator& op) { return op.name == "embedding_norm"; }));
  for (const Layer& layer : bloom.layers) // baddbmm adds the bias inside the product: no pass of its own
    for (const Operator& op : layer.operators)
      CHECK(op.name != "alibi_bias");
}

TEST_CASE("StarCoder2: grouped-query attention with LayerNorms, biases and a one-kernel GeLU MLP")
{
  // StarCoder2-3B's published shape (no verbatim config.json found: SOURCES.md).
  const Workload starcoder = workload_from_json(nlohmann::json::parse(R"({"model_type": "starcoder2",
    "hidden_size": 3072, "intermediate_size": 12288, "num_hidden_layers": 30, "num_attention_heads": 24,
    "num_key_value_heads": 2, "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 16384,
    "sliding_window": 4096, "use_bias": true, "vocab_size": 49152})"), "starcoder2-3b.json");
  REQUIRE(starcoder.shape);
  CHECK(starcoder.shape->kv_heads == 2);
  CHECK_FALSE(starcoder.shape->rms_norm);
  CHECK_FALSE(starcoder.shape->gated_mlp);
  CHECK_FALSE(starcoder.shape->gelu_as_modules);
  CHECK(starcoder.shape->sliding_window == 4096);
  CHECK(starcoder.total_params() == doctest::Approx(3'030'371'328.0).epsilon(1e-12));
}

TEST_CASE("gpt-oss: attention sinks, biased router and experts, q, k, v and o biases; sinks refuse SDPA")
{
  // gpt-oss-20b's shape from OpenAI's model card (no verbatim config.json found: SOURCES.md).
  nlohmann::json config = nlohmann::json::parse(R"({"model_type": "gpt_oss", "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088,
    "sliding_window": 128, "max_position_embeddings": 131072, "tie_word_embeddings": false,
    "quantization_config": {"quant_method": "mxfp4"}})");
  const Workload oss = workload_from_json(config, "gpt-oss-20b.json");
  REQUIRE(oss.shape);
  CHECK(oss.shape->attention_sinks);
  CHECK(oss.shape->expert_biases);
  CHECK(oss.shape->experts == 32);
  CHECK(oss.shape->experts_per_token == 4);
  CHECK_FALSE(oss.shape->flash_attention); // Hugging Face's eager attention
  // GptOssForCausalLM's modules: 24 blocks of attention with biases and 64 sinks, a biased router, 32 experts of
  // gate_up (2 x 2,880) and down with their biases, two norms; untied embedding and head, the final norm.
  const double h = 2880, q = 64 * 64, kv = 8 * 64, e = 32, width = 2880, v = 201088;
  const double attention = (h * q + q) + 2 * (h * kv + kv) + (q * h + h) + 64;
  const double expert    = h * 2 * width + 2 * width + width * h + h;
  const double block     = attention + (h * e + e) + e * expert + 2 * h;
  CHECK(oss.total_params() == doctest::Approx(24 * block + 2 * v * h + h).epsilon(1e-12));
  CHECK(oss.total_params() == doctest::Approx(20.91e9).epsilon(0.001)); // OpenAI's model card: 20.91B
  // The card's 3.61B active leaves the input embedding out.
  CHECK(oss.active_params() - v * h == doctest::Approx(3.61e9).epsilon(0.001));
  config["attention"] = "sdpa";
  CHECK_THROWS_WITH_AS(workload_from_json(config, "oss.json"),
                       doctest::Contains("oss.json: attention: expected \"eager\" or \"flash3\""),
                       hetsim::InputError);
  config["attention"] = "flash3";
  CHECK(workload_from_json(config, "oss.json").shape->attention == AttentionKernel::flash3);
  config.erase("attention");
  config["flash_attention"] = true; // the framework's fused kernel: SDPA under Hugging Face's modules
  CHECK_THROWS_WITH_AS(workload_from_json(config, "oss.json"),
                       doctest::Contains("oss.json: flash_attention: expected false, or \"attention\": \"eager\""),
                       hetsim::InputError);
  // A plan's kernel over the model's is held to the same rule.
  CHECK_THROWS_WITH_AS(with_attention(oss, AttentionKernel::sdpa, "plan.json: framework.attention"),
                       doctest::Contains("plan.json: framework.attention: expected \"eager\" or \"flash3\""),
                       hetsim::InputError);
  CHECK(with_attention(oss, AttentionKernel::flash3, "plan.json: framework.attention").shape->flash_attention);
}
