#include "models/workload.hpp"

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/presets.hpp"
#include "models/hf_config.hpp"
#include "models/layer_list.hpp"
#include "models/transformer.hpp"

#include <algorithm>
#include <unordered_map>

namespace hetsim::models {
namespace {

/// A model without a name is named after its origin: "preset:llama-2-7b" or "dir/my.json" -> its stem.
std::string default_name(const std::string& origin)
{
  std::string name = origin;
  if (auto slash = name.find_last_of("/:"); slash != std::string::npos)
    name = name.substr(slash + 1);
  if (name.size() > 5 && name.ends_with(".json"))
    name.resize(name.size() - 5);
  return name;
}

double sum(const Workload& workload, double Layer::*field)
{
  double total = 0;
  for (const auto& layer : workload.layers)
    total += layer.*field;
  return total;
}

} // namespace

double Workload::total_params() const
{
  return sum(*this, &Layer::params);
}

double Workload::active_params() const
{
  double active = total_params() - sum(*this, &Layer::expert_params);
  if (shape && shape->experts > 0)
    active += sum(*this, &Layer::expert_params) * shape->experts_per_token / shape->experts;
  return active;
}

bool Workload::mixture_of_experts() const
{
  for (const auto& layer : layers)
    if (layer.expert_params > 0)
      return true;
  return false;
}

double Workload::forward_flops_per_sample() const
{
  return sum(*this, &Layer::forward_flops_per_sample);
}

double Workload::backward_flops_per_sample() const
{
  return sum(*this, &Layer::backward_flops_per_sample);
}

double Workload::model_flops_per_sample() const
{
  double flops = forward_flops_per_sample() + backward_flops_per_sample();
  if (!shape || shape->capacity_factor <= 1)
    return flops;
  const double padding = 1 - 1 / shape->capacity_factor; // of each expert product's rows
  for (const Layer& layer : layers)
    for (const Operator& op : layer.operators)
      if (op.experts > 0) // forward, and a backward of twice that
        flops -= 3 * op.flops_per_sample() * padding;
  return flops;
}

double weight_gradient_flops_per_sample(const Layer& layer)
{
  if (layer.operators.empty())
    return layer.forward_flops_per_sample;
  double flops = 0;
  for (const Operator& op : layer.operators)
    flops += op.weight_gradient_flops_per_sample();
  return flops;
}

int default_tensor_parallel_all_reduces(const std::string& kind)
{
  // Megatron splits a block into column- then row-parallel halves: one all-reduce closes each half.
  if (kind == "transformer")
    return 2;
  if (kind == "attention" || kind == "mlp" || kind == "embedding")
    return 1;
  return 0;
}

Workload load_workload(const std::string& file_or_preset)
{
  InputText input = read_input("model", file_or_preset);
  return workload_from_json(JsonInput::parse_text(input.text, input.origin), input.origin);
}

Workload workload_from_json(const nlohmann::json& json, const std::string& origin)
{
  JsonInput root(json, origin);
  if (!root.is_object())
    root.fail("an object (a Hugging Face config.json or a layer list)");
  if (is_layer_list(json))
    return read_layer_list(root, default_name(origin));
  if (is_hf_config(json)) {
    HfModel model     = read_hf_config(root, default_name(origin));
    Workload workload = build_transformer(model.shape);
    workload.assumptions = std::move(model.assumptions);
    workload.dtype        = model.dtype;
    workload.dtype_origin = model.dtype_origin;
    return workload;
  }
  throw InputError(root.where() + ": expected a Hugging Face config.json (with \"model_type\") or a layer list "
                                  "(with \"layers\")");
}

namespace {

/// `workload` rebuilt from `shape`, keeping its dtype and the assumptions `keep` accepts.
template <typename Keep>
Workload rebuilt_from(const Workload& workload, const TransformerShape& shape, Keep keep)
{
  Workload rebuilt = build_transformer(shape);
  for (const std::string& line : workload.assumptions)
    if (keep(line))
      rebuilt.assumptions.push_back(line);
  rebuilt.dtype        = workload.dtype;
  rebuilt.dtype_origin = workload.dtype_origin;
  rebuilt.name         = workload.name;
  return rebuilt;
}

} // namespace

Workload with_seq_len(const Workload& workload, int seq_len, const std::string& option)
{
  if (seq_len <= 0)
    throw InputError(option + ": expected a positive number of tokens, got " + std::to_string(seq_len));
  if (!workload.shape)
    throw InputError(option + ": the model '" + workload.name +
                     "' is a layer list, whose figures are for its own seq_len; set \"seq_len\" and the figures "
                     "there");
  TransformerShape shape = *workload.shape;
  if (shape.max_positions > 0 && seq_len > shape.max_positions)
    throw InputError(option + ": expected at most the model's " + std::to_string(shape.max_positions) +
                     " learned positions, got " + std::to_string(seq_len));
  shape.seq_len = seq_len;
  return rebuilt_from(workload, shape, [](const std::string& line) {
    return line.find(": seq_len not given") == std::string::npos;
  });
}

bool recomputed(const Workload& workload, int layer)
{
  if (!workload.shape || !workload.shape->eager)
    return true;
  const std::string& kind = workload.layers[layer].kind;
  return kind != "embedding" && kind != "head";
}

Workload with_selective_policy(const Workload& workload, SelectivePolicy policy)
{
  if (!workload.shape || workload.shape->selective == policy)
    return workload;
  TransformerShape shape = *workload.shape;
  shape.selective        = policy;
  return rebuilt_from(workload, shape, [](const std::string&) { return true; });
}

Workload with_modules(const Workload& workload, bool eager, bool autocast)
{
  if (!workload.shape || (workload.shape->eager == eager && workload.shape->autocast == autocast))
    return workload;
  TransformerShape shape = *workload.shape;
  shape.eager            = eager;
  shape.autocast         = eager && autocast;
  return rebuilt_from(workload, shape, [](const std::string&) { return true; });
}

Workload with_attention(const Workload& workload, AttentionKernel kernel, const std::string& field)
{
  if (!workload.shape)
    throw InputError(field + ": the model '" + workload.name +
                     "' is a layer list, whose attention is in its figures; give it a Hugging Face config to "
                     "choose its attention kernel");
  if (workload.shape->attention == kernel)
    return workload;
  if (workload.shape->attention_sinks && !takes_attention_sinks(kernel))
    throw InputError(field + ": expected " + attention_sinks_kernels() + " for " + workload.shape->type_name() +
                     ", got \"" + std::string(attention_kernel_name(kernel)) + "\"");
  TransformerShape shape = *workload.shape;
  shape.attention        = kernel;
  if (kernel != AttentionKernel::framework_default)
    shape.flash_attention = !keeps_scores(kernel);
  return rebuilt_from(workload, shape, [](const std::string& line) {
    return line.find(": attention not given") == std::string::npos;
  });
}

Workload with_fp8(const Workload& workload, Fp8Recipe recipe, const std::string& field)
{
  if (!workload.shape) {
    if (recipe == Fp8Recipe::none)
      return workload;
    throw InputError(field + ": the model '" + workload.name +
                     "' is a layer list, whose products are figures, not operators; give it a Hugging Face config "
                     "to train in fp8");
  }
  if (workload.shape->fp8 == recipe)
    return workload;
  TransformerShape shape = *workload.shape;
  shape.fp8              = recipe;
  return rebuilt_from(workload, shape, [](const std::string&) { return true; });
}

namespace {

/// Gives `layer` and its operators the names of `named`'s (same operator count): two layers that do the same work
/// then compare equal.
void take_names(Layer& layer, const Layer& named)
{
  layer.name = named.name;
  for (std::size_t i = 0; i < layer.operators.size(); ++i)
    layer.operators[i].name = named.operators[i].name;
}

/// A hash of the figures that tell most kinds apart, to find a layer's kind among many without comparing it to
/// each.
std::size_t work_hash(const Layer& layer)
{
  std::size_t h = std::hash<std::string>{}(layer.kind);
  for (double figure : {layer.params, layer.forward_flops_per_sample, layer.saved_activation_bytes_per_sample,
                        static_cast<double>(layer.operators.size())})
    h = h * 1000003u ^ std::hash<double>{}(figure);
  return h;
}

} // namespace

std::vector<int> layer_kinds(const std::vector<Layer>& layers)
{
  std::vector<int> kinds(layers.size());
  std::unordered_map<std::size_t, std::vector<int>> firsts; // hash -> first layers of the kinds it holds
  std::unordered_map<int, Layer> copies;                    // first layer of a kind -> a copy to rename
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    auto& same_hash    = firsts[work_hash(layer)];
    const auto kind    = std::find_if(same_hash.begin(), same_hash.end(), [&](int first) {
      Layer& copy = copies.at(first);
      if (copy.operators.size() != layer.operators.size())
        return false;
      take_names(copy, layer); // names aside, equal
      return copy == layer;
    });
    if (kind != same_hash.end()) {
      kinds[l] = *kind;
      continue;
    }
    kinds[l] = static_cast<int>(l);
    same_hash.push_back(static_cast<int>(l));
    copies.emplace(static_cast<int>(l), layer);
  }
  return kinds;
}

} // namespace hetsim::models
