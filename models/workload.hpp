#pragma once
/// The model to train, as an ordered list of layers with the figures every planner and estimator needs.

#include "core/dtype.hpp"
#include "models/operator.hpp"
#include "models/transformer_shape.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hetsim::models {

/// One layer of the model. Byte figures assume 16-bit activations; lowering rescales them for fp32.
struct Layer {
  std::string name;
  std::string kind; ///< "embedding", "transformer", "attention", "mlp", "head" or anything else
  double params                            = 0;
  double forward_flops_per_sample          = 0;
  double backward_flops_per_sample         = 0; ///< 2x forward unless the input says otherwise
  double activation_bytes_per_sample       = 0; ///< the layer's output, what a pipeline stage boundary sends
  double saved_activation_bytes_per_sample = 0; ///< what the layer keeps for backward without recompute
  /// Of those, what its replicated operators keep (norms, dropout-adds, a router) and the inputs of its
  /// column-parallel products: whole on every member of a tensor-parallel group, unless sequence parallelism
  /// splits the sequence (Korthikanti et al. 2022, sec. 4.2.2: 10sbh of a block's 34sbh).
  double replicated_saved_bytes_per_sample = 0;
  double transient_bytes_per_sample        = 0; ///< the largest working memory of one of its operators
  /// Megatron-style tensor-parallel all-reduces of the layer's output per forward pass (backward has as many):
  /// 2 for a transformer block, 1 for attention, MLP, embedding; 0 for layers that are not split.
  int tensor_parallel_all_reduces = 0;
  /// Parameter tensors the params are held in (from the operators; 0 when unknown: a layer list's layer,
  /// taken as one tensor when it has parameters).
  int parameter_tensors = 0;
  /// Of params, those of routed experts: expert parallelism divides them, and their gradients are reduced over
  /// the replicas that hold the same experts.
  double expert_params = 0;
  /// Under selective recompute: what it keeps for backward, and the forward FLOPs its backward reruns.
  double selective_saved_bytes_per_sample  = 0;
  double selective_recompute_flops_per_sample = 0;
  /// Expert-parallel all-to-alls per forward pass (dispatch and combine of a sparse block: 2), as many backward.
  int all_to_alls = 0;
  /// The forward pass as kernels, in order; empty for a layer list's layers, which give only the figures above.
  std::vector<Operator> operators;

  bool operator==(const Layer&) const = default;
};

/// Per layer, the index of the first layer that does the same work: equal in everything but its own and its
/// operators' names. A transformer's blocks are then one kind of layer, which searches price once however many
/// of them the model has.
std::vector<int> layer_kinds(const std::vector<Layer>& layers);

/// Sets the layer's params, FLOPs and saved bytes to the sums over its operators, its transient bytes to their
/// largest (backward = 2 x forward:
/// a matrix product's input gradient and weight gradient each cost its forward), and its tensor-parallel
/// all-reduces per forward to the number of row-split and vocabulary-split operators.
void apply_operator_totals(Layer& layer);

/// The element counts of `op`'s parameter tensors: a linear's weight and its bias of n elements, otherwise its
/// parameters split evenly over its tensors (a norm's weight and bias).
std::vector<double> parameter_tensor_sizes(const Operator& op);
/// The element counts (whole, not per rank) of `op`'s parameter tensors that hold `min_elements` or more on each
/// of `tp` tensor-parallel ranks (a split operator's tensors hold 1/tp of theirs).
std::vector<double> parameter_tensor_sizes_at_least(const Operator& op, double min_elements, int tp = 1);
/// How many of `layer`'s parameter tensors hold `min_elements` or more on each of `tp` tensor-parallel ranks (a
/// split operator's tensors hold 1/tp of theirs): parameter_tensors when it has no operators to tell (a layer
/// list's layer).
int parameter_tensors_at_least(const Layer& layer, double min_elements, int tp = 1);
/// The elements (whole, not per rank) of those tensors: params when it has no operators.
double parameter_elements_at_least(const Layer& layer, double min_elements, int tp = 1);

struct Workload {
  std::string name;
  int seq_len = 0;
  std::vector<Layer> layers;
  /// The transformer the layers were built from (Hugging Face configs); none for a layer list.
  std::optional<TransformerShape> shape;
  /// What the model file left unsaid and HetSim assumed (hf_config.hpp), one line each naming the file.
  std::vector<std::string> assumptions;
  /// The dtype the model file names (a Hugging Face `torch_dtype`): what plans, searches and profiles that do
  /// not name their own train in. None: fp16.
  std::optional<Dtype> dtype;
  std::string dtype_origin; ///< the field that gave dtype ("config.json: torch_dtype")

  /// The dtype to train in when the plan or command names none.
  Dtype default_dtype() const { return dtype.value_or(Dtype::fp16); }
  double total_params() const;
  /// Parameters one token meets: all but the routed experts it is not sent to (total_params for a dense model).
  double active_params() const;
  /// Whether some layer has routed experts.
  bool mixture_of_experts() const;
  double forward_flops_per_sample() const;
  double backward_flops_per_sample() const;
  /// Forward and backward FLOPs of the model's own work, what TFLOP/s and MFU count: the routed experts'
  /// products on the padding slots a capacity factor above 1 adds are run (and priced) but not counted.
  double model_flops_per_sample() const;
};

/// Of a layer's backward FLOPs per sample, its weight gradients' (what a zero-bubble schedule runs apart): its
/// linear operators' forward FLOPs again, or a layer list's layer's forward FLOPs (half its backward).
double weight_gradient_flops_per_sample(const Layer& layer);

/// Whether full recompute covers layer `layer`: every layer under Megatron-LM's, the decoder blocks only under
/// Hugging Face's gradient_checkpointing_enable() (eager modules), whose embedding and head keep what they save
/// and are not run again.
bool recomputed(const Workload& workload, int layer);

/// Default number of tensor-parallel all-reduces per forward for a layer kind.
int default_tensor_parallel_all_reduces(const std::string& kind);

/// Loads `preset:NAME` or a file holding either a Hugging Face config.json (supported_hf_families())
/// or an explicit layer list `{"name", "seq_len", "layers": [...]}`.
Workload load_workload(const std::string& file_or_preset);
/// Same from parsed JSON; `origin` prefixes every error message.
Workload workload_from_json(const nlohmann::json& json, const std::string& origin);
/// The workload trained at `seq_len` tokens instead (--seq-len): rebuilt from its transformer shape; a layer list,
/// whose figures are per its own sequence, is an InputError naming `option`. Drops the seq_len assumption.
Workload with_seq_len(const Workload& workload, int seq_len, const std::string& option);
/// The workload as a framework runs it (TransformerShape::eager, autocast): rebuilt from its transformer shape;
/// a layer list, whose figures are given, is returned as it is.
Workload with_modules(const Workload& workload, bool eager, bool autocast);
/// The workload whose blocks follow `policy` under selective recompute (rebuilt from its shape; a layer list,
/// which has no operators to choose from, unchanged).
Workload with_selective_policy(const Workload& workload, SelectivePolicy policy);
/// The workload with attention run by `kernel` (a plan's choice over the model file's): rebuilt from its
/// transformer shape, with the s x s scores kept where that kernel keeps them; a layer list is an InputError
/// naming `field`.
Workload with_attention(const Workload& workload, AttentionKernel kernel, const std::string& field);
/// The workload with its blocks' linear products in fp8 under `recipe` (models/fp8.hpp), rebuilt from its
/// transformer shape; a layer list, which has no products to run in fp8, is an InputError naming `field`.
Workload with_fp8(const Workload& workload, Fp8Recipe recipe, const std::string& field);

} // namespace hetsim::models
