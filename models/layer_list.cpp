#include "models/layer_list.hpp"

#include "core/error.hpp"
#include "core/json_bounds.hpp"

#include <map>

namespace hetsim::models {
namespace {

std::string non_empty_string(const JsonInput& value)
{
  std::string text = value.string();
  if (text.empty())
    value.fail("a non-empty string");
  return text;
}

// A trillion-parameter model's layers hold some 1e10 parameters, do some 1e14 FLOPs and keep some 1e11 bytes per
// sequence of 2,048 tokens; the bounds leave three orders of magnitude and more.
constexpr double kMaxParams = 1e13, kMaxFlops = 1e18, kMaxBytes = 1e15;

Layer read_layer(const JsonInput& entry)
{
  entry.allow_only({"name", "kind", "params", "forward_flops_per_sample", "backward_flops_per_sample",
                    "activation_bytes_per_sample", "saved_activation_bytes_per_sample",
                    "tensor_parallel_all_reduces"});
  Layer layer;
  layer.name                              = non_empty_string(entry.at("name"));
  layer.kind                              = non_empty_string(entry.at("kind"));
  layer.params                    = bounded_number(entry.at("params"), kMaxParams);
  layer.forward_flops_per_sample  = bounded_number(entry.at("forward_flops_per_sample"), kMaxFlops);
  auto backward                   = entry.find("backward_flops_per_sample");
  layer.backward_flops_per_sample = backward ? bounded_number(*backward, kMaxFlops) : 2 * layer.forward_flops_per_sample;
  layer.activation_bytes_per_sample = bounded_number(entry.at("activation_bytes_per_sample"), kMaxBytes);
  layer.saved_activation_bytes_per_sample =
      bounded_number(entry.at("saved_activation_bytes_per_sample"), kMaxBytes);
  auto all_reduces                        = entry.find("tensor_parallel_all_reduces");
  layer.tensor_parallel_all_reduces =
      all_reduces ? all_reduces->non_negative_int() : default_tensor_parallel_all_reduces(layer.kind);
  return layer;
}

} // namespace

bool is_layer_list(const nlohmann::json& json)
{
  return json.is_object() && json.contains("layers");
}

Workload read_layer_list(const JsonInput& root, const std::string& default_name)
{
  root.allow_only({"name", "description", "source", "seq_len", "layers"});
  for (auto key : {"description", "source"})
    if (auto text = root.find(key))
      text->string();
  Workload workload;
  workload.name    = root.has("name") ? non_empty_string(root.at("name")) : default_name;
  workload.seq_len = root.at("seq_len").positive_int();

  JsonInput layers = root.at("layers");
  if (layers.is_array() && layers.size() == 0)
    throw InputError(layers.where() + ": expected at least one layer, got an empty array");
  // Stages, traces and reports refer to layers by name, so two layers may not share one.
  std::map<std::string, std::size_t> seen;
  const auto entries = layers.elements();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Layer layer = read_layer(entries[i]);
    if (auto [it, inserted] = seen.emplace(layer.name, i); !inserted)
      throw InputError(entries[i].at("name").where() + ": expected a unique layer name, got \"" + layer.name +
                       "\" again (first in layers[" + std::to_string(it->second) + "])");
    workload.layers.push_back(std::move(layer));
  }
  return workload;
}

} // namespace hetsim::models
