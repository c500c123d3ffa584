#include "models/hf_config.hpp"

#include "core/error.hpp"

#include <array>
#include <string_view>

namespace hetsim::models {
namespace {

/// Reads what a family's config names differently into `shape`; defaults are those of the transformers library,
/// so a config saved without a field means what it means to Hugging Face.
using FamilyReader = void (*)(const JsonInput& config, TransformerShape& shape);

/// Attention heads must split the hidden size evenly, and query heads must group evenly over key/value heads.
void check_heads(const JsonInput& config, const TransformerShape& shape, std::string_view hidden_key,
                 std::string_view heads_key, std::string_view kv_heads_key)
{
  if (shape.hidden % shape.heads != 0)
    config.at(heads_key).fail("a divisor of " + std::string(hidden_key) + " (" + std::to_string(shape.hidden) + ")");
  if (shape.heads % shape.kv_heads != 0)
    config.at(kv_heads_key).fail("a divisor of " + std::string(heads_key) + " (" + std::to_string(shape.heads) + ")");
}

/// The deepest models have a few hundred layers; far more is a typo that would exhaust memory.
int read_layer_count(const JsonInput& value)
{
  constexpr int kMaxLayers = 100'000;
  const int layers         = value.positive_int();
  if (layers > kMaxLayers)
    value.fail("at most " + std::to_string(kMaxLayers) + " layers");
  return layers;
}

void read_llama(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = config.at("hidden_size").positive_int();
  shape.intermediate    = config.at("intermediate_size").positive_int();
  shape.layers          = read_layer_count(config.at("num_hidden_layers"));
  shape.heads           = config.at("num_attention_heads").positive_int();
  shape.kv_heads        = config.positive_int_or("num_key_value_heads", shape.heads);
  shape.vocab           = config.at("vocab_size").positive_int();
  shape.seq_len         = config.positive_int_or("max_position_embeddings", 2048);
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", false);
  shape.max_positions   = 0; // rotary positions have no weights
  shape.gated_mlp       = true;
  shape.biases          = false;
  shape.rms_norm        = true;
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_key_value_heads");
  // Newer configs spell out head_dim; the shape only knows hidden / heads.
  if (auto head_dim = config.find("head_dim"); head_dim && head_dim->positive_int() != shape.hidden / shape.heads)
    head_dim->fail("hidden_size / num_attention_heads (" + std::to_string(shape.hidden / shape.heads) + ")");
}

void read_gpt2(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = config.at("n_embd").positive_int();
  shape.layers          = read_layer_count(config.at("n_layer"));
  shape.heads           = config.at("n_head").positive_int();
  shape.kv_heads        = shape.heads;
  shape.intermediate    = config.positive_int_or("n_inner", 4 * shape.hidden);
  shape.vocab           = config.at("vocab_size").positive_int();
  shape.max_positions   = config.positive_int_or("n_positions", 1024);
  shape.seq_len         = shape.max_positions;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  check_heads(config, shape, "n_embd", "n_head", "n_head");
}

void read_bert(const JsonInput& config, TransformerShape& shape)
{
  shape.hidden          = config.at("hidden_size").positive_int();
  shape.layers          = read_layer_count(config.at("num_hidden_layers"));
  shape.heads           = config.at("num_attention_heads").positive_int();
  shape.kv_heads        = shape.heads;
  shape.intermediate    = config.at("intermediate_size").positive_int();
  shape.vocab           = config.at("vocab_size").positive_int();
  shape.max_positions   = config.positive_int_or("max_position_embeddings", 512);
  shape.seq_len         = shape.max_positions;
  shape.type_vocab      = config.find("type_vocab_size") ? config.at("type_vocab_size").non_negative_int() : 2;
  shape.tied_embeddings = config.boolean_or("tie_word_embeddings", true);
  shape.post_norm       = true;
  shape.pooler          = true;
  check_heads(config, shape, "hidden_size", "num_attention_heads", "num_attention_heads");
}

struct Family {
  std::string_view model_type;
  std::string_view architecture_prefix; ///< for configs that only list "architectures"
  std::string_view family;
  FamilyReader read;
};

// Mistral configs use llama's field names and architecture (its sliding window changes no count).
constexpr std::array kFamilies{
    Family{"llama", "Llama", "llama", read_llama},
    Family{"mistral", "Mistral", "llama", read_llama},
    Family{"gpt2", "GPT2", "gpt2", read_gpt2},
    Family{"bert", "Bert", "bert", read_bert},
};

const Family& find_family(const JsonInput& config)
{
  if (auto model_type = config.find("model_type")) {
    const std::string type = model_type->string();
    for (const auto& family : kFamilies)
      if (family.model_type == type)
        return family;
    model_type->fail("a supported model type (" + supported_hf_families() + ")");
  }
  JsonInput first = config.at("architectures").at(std::size_t{0});
  const std::string architecture = first.string();
  for (const auto& family : kFamilies)
    if (architecture.starts_with(family.architecture_prefix))
      return family;
  first.fail("an architecture of a supported family (" + supported_hf_families() + ")");
}

} // namespace

bool is_hf_config(const nlohmann::json& json)
{
  return json.is_object() && (json.contains("model_type") || json.contains("architectures"));
}

std::string supported_hf_families()
{
  std::string names;
  for (const auto& family : kFamilies)
    names += (names.empty() ? "" : ", ") + std::string(family.model_type);
  return names;
}

TransformerShape read_hf_config(const JsonInput& config, const std::string& default_name)
{
  if (!config.is_object())
    config.fail("an object");
  const Family& family = find_family(config);
  TransformerShape shape;
  shape.family = family.family;
  shape.name   = config.string_or("_name_or_path", "");
  if (shape.name.empty())
    shape.name = default_name.empty() ? std::string(family.model_type) : default_name;
  family.read(config, shape);

  // "flash_attention" is our extension too: how the model is trained, not what it is.
  shape.flash_attention = config.boolean_or("flash_attention", false);
  // "seq_len" is our extension: the length trained on, often shorter than the positions the model supports.
  if (auto seq_len = config.find("seq_len")) {
    shape.seq_len = seq_len->positive_int();
    if (shape.max_positions > 0 && shape.seq_len > shape.max_positions)
      seq_len->fail("at most the " + std::to_string(shape.max_positions) + " learned positions");
  }
  return shape;
}

} // namespace hetsim::models
