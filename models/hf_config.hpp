#pragma once
/// Reading Hugging Face `config.json` files of the families HetSim models (supported_hf_families()), dense and
/// mixture-of-experts.

#include "core/dtype.hpp"
#include "core/json_input.hpp"
#include "models/transformer.hpp"

#include <optional>
#include <string>
#include <vector>

namespace hetsim::models {

/// True when the JSON looks like a Hugging Face config ("model_type" or "architectures") rather than a layer list.
bool is_hf_config(const nlohmann::json& json);
struct HfModel {
  TransformerShape shape;
  /// What the file left unsaid and HetSim assumed, one line each naming the file ("model.json: seq_len not
  /// given: ..."), for the commands to print.
  std::vector<std::string> assumptions;
  /// The dtype the weights were saved in (`torch_dtype`, or `dtype` in newer files); none when unsaid.
  std::optional<Dtype> dtype;
  std::string dtype_origin; ///< the field that gave it ("config.json: torch_dtype")
};

/// The transformer shape described by a Hugging Face config; unknown families are an InputError listing the
/// supported ones and the layer-list format. Our extensions: "seq_len" (the length trained on; otherwise the
/// config's maximum positions, an assumption) and "attention" (the kernel by name, models/attention_kernel.hpp;
/// or the older "flash_attention" true or false; otherwise the family's default, an assumption).
HfModel read_hf_config(const JsonInput& config, const std::string& default_name = "");

/// Comma-separated supported values of "model_type", for messages.
std::string supported_hf_families();

} // namespace hetsim::models
