#include "strategies/lowering/task_kernels.hpp"

#include "core/error.hpp"
#include "strategies/lowering/scale.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::strategies {
namespace {

using models::Kernel;
using models::Operator;

/// Hidden size of a layer from its parameters: a transformer block holds about 12 h^2 weights (QKV, output
/// projection, a 4h MLP); other layers are taken as one square matrix.
double hidden_size(const models::Layer& layer)
{
  if (layer.params <= 0)
    return 64; // parameter-free layers (e.g. attention scores alone) still multiply activations
  return std::max(1.0, std::round(std::sqrt(layer.params / (layer.kind == "transformer" ? 12.0 : 1.0))));
}

double layer_flops(const models::Layer& layer, bool backward)
{
  return backward ? layer.backward_flops_per_sample : layer.forward_flops_per_sample;
}

/// The forward's operators in groups that each end with a tensor-parallel all-reduce (a row- or
/// vocabulary-parallel operator); operators after the last one join the last group.
std::vector<std::vector<const Operator*>> all_reduce_groups(const std::vector<Operator>& ops)
{
  std::vector<std::vector<const Operator*>> groups(1);
  for (const Operator& op : ops) {
    groups.back().push_back(&op);
    if (op.split == models::TensorSplit::rows || op.split == models::TensorSplit::vocabulary)
      groups.emplace_back();
  }
  if (groups.size() > 1) {
    auto& trailing = groups.back();
    groups[groups.size() - 2].insert(groups[groups.size() - 2].end(), trailing.begin(), trailing.end());
    groups.pop_back();
  }
  return groups;
}

/// Operators of piece `piece` of `pieces` of one pass, in the order the pass runs them: the backward runs the
/// forward's groups, and the operators in them, in reverse. When the operators do not fall into `pieces`
/// groups the pass is cut into equal runs of operators.
std::vector<const Operator*> piece_operators(const std::vector<Operator>& ops, int piece, int pieces, bool backward)
{
  auto groups = all_reduce_groups(ops);
  if (static_cast<int>(groups.size()) != pieces) {
    groups.assign(static_cast<std::size_t>(pieces), {});
    for (std::size_t i = 0; i < ops.size(); ++i)
      groups[i * static_cast<std::size_t>(pieces) / ops.size()].push_back(&ops[i]);
  }
  if (backward) {
    std::reverse(groups.begin(), groups.end());
    for (auto& group : groups)
      std::reverse(group.begin(), group.end());
  }
  return groups[static_cast<std::size_t>(piece)];
}

void append_pass(std::vector<Kernel>& kernels, const std::vector<const Operator*>& ops, int tp, double samples,
                 bool backward, double scale)
{
  for (const Operator* op : ops)
    for (Kernel& kernel : models::operator_kernels(scaled_operator(*op, scale), tp, samples, backward))
      kernels.push_back(std::move(kernel));
}

/// One product for the task's share of FLOPs on a layer given only by its totals.
Kernel totals_product(const Task& task, const models::Workload& model, int l, int tp, double scale)
{
  const bool backward = task.kind == TaskKind::backward;
  double total        = 0;
  for (int i = task.first_layer; i < task.first_layer + task.layer_count; ++i)
    total += layer_flops(model.layers[i], backward);
  const models::Layer& layer = model.layers[l];
  const double share         = total > 0 ? layer_flops(layer, backward) / total : 1.0 / task.layer_count;
  const double flops         = scaled_flops(task, scale) * share;
  const double hidden        = hidden_size(layer);
  const double width         = layer.params > 0 ? layer.params / tp / hidden : hidden;
  Kernel kernel;
  kernel.name  = layer.name;
  kernel.kind  = Kernel::Kind::matmul;
  kernel.k     = std::max(1.0, std::round(hidden * scale));
  kernel.n     = std::max(1.0, std::round(width * scale));
  kernel.m     = std::max(1.0, std::round(flops / (2 * kernel.k * kernel.n)));
  kernel.flops = flops > 0 ? 2 * kernel.m * kernel.k * kernel.n : 0;
  kernel.bytes = 2 * (kernel.m * kernel.k + kernel.k * kernel.n + kernel.m * kernel.n);
  return kernel;
}

} // namespace

std::vector<Kernel> task_kernels(const Task& task, const models::Workload& model, int tp, double scale)
{
  HETSIM_ASSERT(task.first_layer >= 0 && task.first_layer + task.layer_count <= static_cast<int>(model.layers.size()));
  const bool backward = task.kind == TaskKind::backward && !task.recomputed;
  const bool rerun    = backward && task.recomputes; // a recomputed piece is a forward of its own
  const double samples = task.samples;
  std::vector<Kernel> kernels;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l) {
    const models::Layer& layer = model.layers[l];
    if (layer.operators.empty()) {
      Kernel product = totals_product(task, model, l, tp, scale);
      if (product.flops > 0)
        kernels.push_back(std::move(product));
      continue;
    }
    const int pieces = std::max(1, task.pieces);
    const auto ops   = piece_operators(layer.operators, task.piece % pieces, pieces, backward);
    if (rerun) // the forward again, then the backward
      append_pass(kernels, piece_operators(layer.operators, task.piece % pieces, pieces, false), tp, samples, false,
                  scale);
    append_pass(kernels, ops, tp, samples, backward, scale);
  }
  return kernels;
}

} // namespace hetsim::strategies
