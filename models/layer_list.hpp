#pragma once
/// Explicit layer lists: `{"name", "seq_len", "layers": [{"name", "kind", "params", ...}]}`.

#include "core/json_input.hpp"
#include "models/workload.hpp"

namespace hetsim::models {

/// True when the JSON holds a "layers" member, i.e. is meant as a layer list.
bool is_layer_list(const nlohmann::json& json);
/// Reads and validates a layer list; `default_name` names the workload when the file does not.
Workload read_layer_list(const JsonInput& root, const std::string& default_name);

} // namespace hetsim::models
