#pragma once
/// Reading Hugging Face `config.json` files (llama, gpt2, bert families).

#include "core/json_input.hpp"
#include "models/transformer.hpp"

namespace hetsim::models {

/// True when the JSON looks like a Hugging Face config rather than a layer list.
bool is_hf_config(const nlohmann::json& json);
/// The transformer shape described by a Hugging Face config; unknown families are an InputError
/// listing the supported ones. `seq_len` defaults to the config's maximum positions.
TransformerShape read_hf_config(const JsonInput& config);

} // namespace hetsim::models
