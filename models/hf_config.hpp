#pragma once
/// Reading Hugging Face `config.json` files (llama, gpt2, bert families).

#include "core/json_input.hpp"
#include "models/transformer.hpp"

#include <string>

namespace hetsim::models {

/// True when the JSON looks like a Hugging Face config ("model_type" or "architectures") rather than a layer list.
bool is_hf_config(const nlohmann::json& json);
/// The transformer shape described by a Hugging Face config; unknown families are an InputError
/// listing the supported ones. An optional top-level "seq_len" (our extension) sets the sequence
/// length, which otherwise defaults to the config's maximum positions.
TransformerShape read_hf_config(const JsonInput& config, const std::string& default_name = "");

/// Comma-separated supported values of "model_type", for messages.
std::string supported_hf_families();

} // namespace hetsim::models
