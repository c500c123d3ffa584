#include "models/hf_config.hpp"

#include "input_error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace hetsim::models;
using hetsim::models::test::input_error_of;
using nlohmann::json;

namespace {

json llama_7b()
{
  return json{{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"hidden_size", 4096},
              {"intermediate_size", 11008},
              {"num_hidden_layers", 32},
              {"num_attention_heads", 32},
              {"num_key_value_heads", 32},
              {"vocab_size", 32000},
              {"max_position_embeddings", 4096},
              {"rope_scaling", nullptr}};
}

json gpt2_small()
{
  return json{{"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12}, {"n_positions", 1024},
              {"vocab_size", 50257}, {"n_inner", nullptr}};
}

json bert_base()
{
  return json{{"model_type", "bert"},        {"hidden_size", 768},     {"num_hidden_layers", 12},
              {"num_attention_heads", 12}, {"intermediate_size", 3072}, {"vocab_size", 30522},
              {"max_position_embeddings", 512}, {"type_vocab_size", 2}};
}

TransformerShape shape_of(const json& config)
{
  return read_hf_config(hetsim::JsonInput(config, "config.json"), "config").shape;
}

std::string error_of(const json& config)
{
  return input_error_of([&] { workload_from_json(config, "config.json"); });
}

} // namespace

TEST_CASE("llama configs")
{
  TransformerShape s = shape_of(llama_7b());
  CHECK(s.family == "llama");
  CHECK(s.name == "config");
  CHECK(s.seq_len == 4096); // max positions when the file sets no seq_len
  CHECK(s.max_positions == 0);
  CHECK(s.gated_mlp);
  CHECK(s.rms_norm);
  CHECK_FALSE(s.biases);
  CHECK_FALSE(s.tied_embeddings); // llama's default

  SUBCASE("seq_len extension")
  {
    json config = llama_7b();
    config["seq_len"] = 2048;
    CHECK(shape_of(config).seq_len == 2048);
  }
  SUBCASE("key/value heads default to the query heads")
  {
    json config = llama_7b();
    config.erase("num_key_value_heads");
    CHECK(shape_of(config).kv_heads == 32);
  }
  SUBCASE("tied embeddings drop the output projection's weights")
  {
    json config = llama_7b();
    config["tie_word_embeddings"] = true;
    CHECK(workload_from_json(llama_7b(), "a.json").total_params() -
              workload_from_json(config, "b.json").total_params() ==
          32000.0 * 4096);
  }
  SUBCASE("mistral reads as llama")
  {
    json config = llama_7b();
    config["model_type"] = "mistral";
    CHECK(shape_of(config).family == "llama");
  }
  SUBCASE("_name_or_path names the model")
  {
    json config = llama_7b();
    config["_name_or_path"] = "meta-llama/Llama-2-7b-hf";
    CHECK(workload_from_json(config, "config.json").name == "meta-llama/Llama-2-7b-hf");
  }
}

TEST_CASE("the family comes from architectures when model_type is absent")
{
  json config = llama_7b();
  config.erase("model_type");
  CHECK(shape_of(config).family == "llama");
  json gpt2 = gpt2_small();
  gpt2.erase("model_type");
  gpt2["architectures"] = {"GPT2LMHeadModel"};
  CHECK(shape_of(gpt2).family == "gpt2");
}

TEST_CASE("every fixture reads as the same model type from its architectures alone")
{
  const std::filesystem::path fixtures = std::filesystem::path(HETSIM_SOURCE_DIR) / "tests/models/data/hf";
  for (const auto& entry : std::filesystem::directory_iterator(fixtures)) {
    if (entry.path().extension() != ".json")
      continue; // SOURCES.md
    CAPTURE(entry.path().filename().string());
    json config = json::parse(std::ifstream(entry.path()));
    REQUIRE(config.contains("architectures"));
    const TransformerShape given = shape_of(config);
    config.erase("model_type");
    const TransformerShape inferred = shape_of(config);
    CHECK(inferred.model_type == given.model_type);
    CHECK(inferred.sandwich_norms == given.sandwich_norms); // Gemma-2's "Gemma2..." also starts with "Gemma"
    CHECK(inferred.layers == given.layers);
  }
}

TEST_CASE("gpt2 configs")
{
  TransformerShape s = shape_of(gpt2_small());
  CHECK(s.family == "gpt2");
  CHECK(s.intermediate == 4 * 768); // n_inner null means 4 n_embd
  CHECK(s.max_positions == 1024);
  CHECK(s.seq_len == 1024);
  CHECK(s.tied_embeddings);
  // GPT-2 small: 124,439,808 parameters in the released checkpoint.
  CHECK(workload_from_json(gpt2_small(), "config.json").total_params() == 124439808.0);
}

TEST_CASE("fused_norm: an RMSNorm that eager PyTorch runs as one kernel keeps only its input")
{
  json config = llama_7b();
  auto first_norm = [](const Workload& w) { return w.layers[1].operators.front(); };
  const Workload expression = with_modules(workload_from_json(config, "config.json"), true, false);
  config["fused_norm"]      = true;
  const Workload fused      = with_modules(workload_from_json(config, "config.json"), true, false);
  const double s = 4096, h = 4096; // llama_7b's sequence (its positions) and width
  // Hugging Face's expression on a 16-bit input keeps its fp32 copy and the 16-bit normalised value (6 bytes an
  // element); the fused kernel its 16-bit input, in one launch each way.
  CHECK(first_norm(expression).saved_bytes_per_sample == 6 * s * h);
  CHECK(first_norm(fused).saved_bytes_per_sample == 2 * s * h);
  CHECK(first_norm(fused).launches_forward == 1);
  CHECK(fused.total_params() == expression.total_params());
  // LayerNorm already is one kernel.
  json gpt2          = gpt2_small();
  gpt2["fused_norm"] = true;
  CHECK(error_of(gpt2) == "config.json: fused_norm: expected no fused_norm: gpt2 uses LayerNorm, which PyTorch runs "
                          "as one kernel, got boolean");
}

TEST_CASE("fused_gelu: Megatron-LM's fused GeLU by default, a note for gelu_new, eager PyTorch's op-by-op GeLU "
          "on request")
{
  const Workload fused = workload_from_json(gpt2_small(), "config.json");
  bool noted           = false;
  for (const std::string& line : fused.assumptions)
    noted = noted ||
            line.find("config.json: fused_gelu not given: gelu_new runs as the plan's framework runs the model") == 0;
  CHECK(noted);
  json config          = gpt2_small();
  config["fused_gelu"] = false;
  const Workload eager = workload_from_json(config, "config.json");
  auto gelu = [](const Workload& w) {
    for (const Operator& op : w.layers[1].operators)
      if (op.name == "gelu")
        return op;
    FAIL("no gelu operator");
    return Operator{};
  };
  // Kept for backward per sample, 16-bit: the input (2 x s x 4h bytes) fused; x, tanh, 0.5x and 1 + tanh eager.
  const double s = 1024, width = 4 * 768;
  CHECK(gelu(fused).saved_bytes_per_sample == 2 * s * width);
  CHECK(gelu(eager).saved_bytes_per_sample == 8 * s * width);
  CHECK(gelu(eager).bytes_per_sample == 9 * gelu(fused).bytes_per_sample);
  CHECK(eager.total_params() == fused.total_params());
  // Unsaid, gelu_new follows the framework's modules: op by op in Hugging Face's eager ones.
  CHECK(gelu(with_modules(fused, true, false)).saved_bytes_per_sample == 8 * s * width);
  CHECK(gelu(with_modules(fused, false, false)).saved_bytes_per_sample == 2 * s * width);
  // Only gelu_new runs op by op: OPT's ReLU and BERT's exact GeLU are single kernels.
  json opt = {{"model_type", "opt"}, {"hidden_size", 768}, {"num_hidden_layers", 12}, {"num_attention_heads", 12},
              {"ffn_dim", 3072}, {"vocab_size", 50272}, {"max_position_embeddings", 2048},
              {"activation_function", "relu"}, {"fused_gelu", false}};
  CHECK(error_of(opt) == "config.json: fused_gelu: expected no fused_gelu: the activation is 'relu', which PyTorch "
                         "runs as one kernel (only gelu_new runs op by op), got boolean");
  json bert          = bert_base();
  bert["hidden_act"] = "gelu";
  bert["fused_gelu"] = false;
  CHECK(error_of(bert).find("the activation is 'gelu', which PyTorch runs as one kernel") != std::string::npos);
  // A gated MLP has no GeLU to fuse.
  json llama          = llama_7b();
  llama["fused_gelu"] = false;
  CHECK(error_of(llama) == "config.json: fused_gelu: expected no fused_gelu: llama has a gated MLP, not a GeLU, got "
                           "boolean");
}

TEST_CASE("bert configs")
{
  TransformerShape s = shape_of(bert_base());
  CHECK(s.family == "bert");
  CHECK(s.type_vocab == 2);
  CHECK(s.post_norm);
  CHECK(s.pooler);
  // BertModel("bert-base-uncased"): 109,482,240 parameters, pooler included.
  CHECK(workload_from_json(bert_base(), "config.json").total_params() == 109482240.0);
}

TEST_CASE("presets load from their files too")
{
  Workload w = load_workload(std::string(HETSIM_SOURCE_DIR) + "/presets/model/llama-2-7b.json");
  CHECK(w.name == "llama-2-7b");
  CHECK(w.total_params() == 6738415616.0);
}

TEST_CASE("bad configs are InputErrors naming the file and the JSON path")
{
  SUBCASE("unknown model type lists the supported families and the layer list as the way out")
  {
    json config = llama_7b();
    config["model_type"] = "mamba";
    CHECK(error_of(config) ==
          "config.json: model_type: expected a supported model type (" + supported_hf_families() +
              "); or describe the model as a layer list {\"name\", \"seq_len\", \"layers\": [...]} (docs/inputs.md, "
              "\"Model\"), got string \"mamba\"");
  }
  SUBCASE("a mixture-of-experts family HetSim does not read is refused, never loaded as its dense part")
  {
    json config = llama_7b();
    config["model_type"] = "dbrx";
    const std::string message = error_of(config);
    CHECK(message.find("config.json: model_type: expected a supported model type") == 0);
    CHECK(message.find("mixture-of-experts family is not modelled") != std::string::npos);
  }
  SUBCASE("more experts per token than experts")
  {
    json config                 = llama_7b();
    config["model_type"]          = "mixtral";
    config["num_local_experts"]   = 4;
    config["num_experts_per_tok"] = 6;
    CHECK(error_of(config).find("config.json: num_experts_per_tok: expected at most the 4 experts") == 0);
  }
  SUBCASE("a capacity factor below balanced routing")
  {
    json config               = llama_7b();
    config["model_type"]        = "mixtral";
    config["capacity_factor"]   = 0.5;
    CHECK(error_of(config).find("config.json: capacity_factor: expected a capacity factor from 1") == 0);
  }
  SUBCASE("a hidden size whose default MLP width (4 x hidden) would overflow")
  {
    json config      = gpt2_small();
    config["n_embd"] = 2147483647;
    config["n_head"] = 1;
    CHECK(error_of(config) == "config.json: n_embd: expected a positive integer of at most 16777216, got number 2147483647");
  }
  SUBCASE("a size whose sums leave the int range (DeepSeek's rope head at 2^31 - 1 printed -2,062 B parameters)")
  {
    json config                = json::parse(R"({"model_type": "deepseek_v3", "hidden_size": 7168,
      "intermediate_size": 18432, "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
      "vocab_size": 129280, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
      "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3})");
    CHECK_NOTHROW(workload_from_json(config, "config.json"));
    config["qk_rope_head_dim"] = 2147483647;
    CHECK(error_of(config) ==
          "config.json: qk_rope_head_dim: expected a positive integer of at most 16777216, got number 2147483647");
  }
  SUBCASE("a torch_dtype HetSim cannot train in")
  {
    json config           = llama_7b();
    config["torch_dtype"] = "float64";
    CHECK(error_of(config) ==
          "config.json: torch_dtype: expected \"float16\", \"bfloat16\" or \"float32\", got string \"float64\"");
    config.erase("torch_dtype");
    config["dtype"] = "int8"; // the newer transformers releases' name for it
    CHECK(error_of(config).find("config.json: dtype: expected \"float16\"") == 0);
  }
  SUBCASE("unknown architecture")
  {
    json config = llama_7b();
    config.erase("model_type");
    config["architectures"] = {"MambaForCausalLM"};
    CHECK(error_of(config).find("config.json: architectures[0]: expected an architecture of a supported family (" +
                                supported_hf_families() + "); or describe the model as a layer list") == 0);
  }
  SUBCASE("model_type not a string")
  {
    json config = llama_7b();
    config["model_type"] = 7;
    CHECK(error_of(config) == "config.json: model_type: expected a string, got number 7");
  }
  SUBCASE("missing field")
  {
    json config = llama_7b();
    config.erase("hidden_size");
    CHECK(error_of(config) == "config.json: (top level): missing required field 'hidden_size'");
  }
  SUBCASE("wrong type")
  {
    json config = gpt2_small();
    config["n_embd"] = "768";
    CHECK(error_of(config) == "config.json: n_embd: expected an integer, got string \"768\"");
  }
  SUBCASE("heads must divide the hidden size")
  {
    json config = bert_base();
    config["num_attention_heads"] = 10;
    CHECK(error_of(config) == "config.json: num_attention_heads: expected a divisor of hidden_size (768), got number 10");
  }
  SUBCASE("key/value heads must divide the heads")
  {
    json config = llama_7b();
    config["num_key_value_heads"] = 5;
    CHECK(error_of(config) == "config.json: num_key_value_heads: expected a divisor of num_attention_heads (32), got number 5");
  }
  SUBCASE("seq_len must be positive")
  {
    json config = llama_7b();
    config["seq_len"] = -4;
    CHECK(error_of(config) == "config.json: seq_len: expected a positive integer, got number -4");
  }
  SUBCASE("seq_len cannot exceed learned positions")
  {
    json config = gpt2_small();
    config["seq_len"] = 2048;
    CHECK(error_of(config) == "config.json: seq_len: expected at most the 1024 learned positions, got number 2048");
  }
  SUBCASE("tie_word_embeddings must be a boolean")
  {
    json config = llama_7b();
    config["tie_word_embeddings"] = "no";
    CHECK(error_of(config) == "config.json: tie_word_embeddings: expected true or false, got string \"no\"");
  }
  SUBCASE("neither a config nor a layer list")
  {
    CHECK(error_of(json{{"hidden_size", 8}}) == "config.json: (top level): expected a Hugging Face config.json (with "
                                                "\"model_type\") or a layer list (with \"layers\")");
  }
  SUBCASE("not an object")
  {
    CHECK(error_of(json::array()) ==
          "config.json: (top level): expected an object (a Hugging Face config.json or a layer list), got array");
  }
}

TEST_CASE("unreadable model inputs")
{
  CHECK(input_error_of([] { load_workload("/nonexistent/model.json"); }) == "/nonexistent/model.json: cannot open file (No such file or directory)");
  CHECK(input_error_of([] { load_workload("preset:nope"); }).starts_with("preset:nope: unknown model preset 'nope'; known: "));
}

TEST_CASE("an absurd layer count is refused before it exhausts memory")
{
  auto config       = nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 1000000000, "n_embd": 64, "n_head": 4,
                                            "n_positions": 128, "vocab_size": 100})");
  CHECK_THROWS_WITH_AS(hetsim::models::workload_from_json(config, "deep.json"),
                       "deep.json: n_layer: expected at most 100000 layers, got number 1000000000", hetsim::InputError);
}
