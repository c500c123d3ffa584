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

/// The groups of operators a pass of `pieces` pieces runs, in the forward's order: those between its
/// communications (models::communication_groups), or, when the operators do not fall into `pieces` of them,
/// equal runs of operators.
std::vector<std::vector<const Operator*>> piece_groups(const std::vector<Operator>& ops, int pieces, int tp, int ep,
                                                       int cp)
{
  std::vector<std::vector<const Operator*>> groups;
  for (auto& group : models::communication_groups(ops, tp, ep, cp))
    groups.push_back(std::move(group.operators));
  if (static_cast<int>(groups.size()) != pieces) {
    groups.assign(static_cast<std::size_t>(pieces), {});
    for (std::size_t i = 0; i < ops.size(); ++i)
      groups[i * static_cast<std::size_t>(pieces) / ops.size()].push_back(&ops[i]);
  }
  return groups;
}

/// Appends the kernels of piece `piece` of one pass over `groups`: the backward runs the forward's groups, and
/// the operators in them, in reverse.
void append_piece(std::vector<Kernel>& kernels, const std::vector<std::vector<const Operator*>>& groups, int piece,
                  int tp, double samples, bool backward, double scale, bool sequence_parallel)
{
  const auto& group = groups[static_cast<std::size_t>(backward ? static_cast<int>(groups.size()) - 1 - piece : piece)];
  auto append = [&](const Operator* op) {
    for (Kernel& kernel :
         models::operator_kernels(scaled_operator(*op, scale), tp, samples, backward, sequence_parallel))
      kernels.push_back(std::move(kernel));
  };
  if (backward)
    std::for_each(group.rbegin(), group.rend(), append);
  else
    std::for_each(group.begin(), group.end(), append);
}

/// One product for the layer's share (`share` of the task's FLOPs) on a layer given only by its totals.
Kernel totals_product(const Task& task, const models::Layer& layer, double share, int tp, double scale)
{
  const double flops  = scaled_flops(task, scale) * share;
  const double hidden = hidden_size(layer);
  const double width  = layer.params > 0 ? layer.params / tp / hidden : hidden;
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

std::vector<Kernel> task_kernels(const Task& task, const models::Workload& model, int tp, double scale, int ep,
                                 bool sequence_parallel, int cp)
{
  if (task.kind != TaskKind::forward && task.kind != TaskKind::backward)
    return {};
  HETSIM_ASSERT(task.first_layer >= 0 && task.first_layer + task.layer_count <= static_cast<int>(model.layers.size()));
  const bool backward  = task.kind == TaskKind::backward && !task.recomputed;
  const bool rerun     = backward && task.recomputes; // a recomputed piece is a forward of its own
  const int pieces     = std::max(1, task.pieces);
  const int piece      = task.piece % pieces;
  const double samples = static_cast<double>(task.samples) / cp; // a context-parallel rank's share
  // Layers given by their totals share the task's FLOPs in proportion to theirs.
  const bool by_flops = task.kind == TaskKind::backward;
  double total        = 0;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
    total += layer_flops(model.layers[l], by_flops);
  std::vector<Kernel> kernels;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l) {
    const models::Layer& layer = model.layers[l];
    if (layer.operators.empty()) {
      const double share = total > 0 ? layer_flops(layer, by_flops) / total : 1.0 / task.layer_count;
      Kernel product     = totals_product(task, layer, share, tp, scale);
      if (product.flops > 0)
        kernels.push_back(std::move(product));
      continue;
    }
    const auto groups = piece_groups(layer.operators, pieces, tp, ep, cp);
    if (rerun) // the forward again, then the backward
      append_piece(kernels, groups, piece, tp, samples, false, scale, sequence_parallel);
    if (backward && task.recomputes_attention) { // what selective recompute reruns of the piece, then the backward
      std::vector<Operator> reruns; // whole operators, or the products one calls again (Operator::selective_rerun)
      for (const Operator* op : groups[static_cast<std::size_t>(static_cast<int>(groups.size()) - 1 - piece)])
        if (op->selectively_recomputed)
          reruns.push_back(op->selective_rerun());
      std::vector<std::vector<const Operator*>> core(1);
      for (const Operator& op : reruns)
        core.front().push_back(&op);
      append_piece(kernels, core, 0, tp, samples, false, scale, sequence_parallel);
    }
    append_piece(kernels, groups, piece, tp, samples, backward, scale, sequence_parallel);
  }
  // Zero bubble: the weight-gradient products run apart from the rest of the backward.
  if (task.part != BackwardPart::whole)
    std::erase_if(kernels, [&](const Kernel& k) {
      return k.weight_gradient != (task.part == BackwardPart::weight_gradients);
    });
  return kernels;
}

} // namespace hetsim::strategies
