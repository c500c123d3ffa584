#include "strategies/planners/amp/pipeline_costs.hpp"

#include "costmodel/collective.hpp"
#include "strategies/lowering/fp32_accumulation.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace hetsim::strategies {

PipelineCosts::PipelineCosts(const Plan& shape, const Problem& problem, const costmodel::ComputeModel& compute)
    : shape_(shape), problem_(problem)
{
  const Cluster& cluster = *problem.cluster;
  const auto& layers     = problem.workload->layers;
  const int layer_count  = static_cast<int>(layers.size());
  kinds_                 = models::layer_kinds(layers);
  const auto& kinds      = kinds_;
  std::vector<int> kind_firsts, kind_index(layer_count, -1); // the first layer of each kind; its position there
  for (int l = 0; l < layer_count; ++l)
    if (kinds[l] == l) {
      kind_index[l] = static_cast<int>(kind_firsts.size());
      kind_firsts.push_back(l);
    }

  // Layer times on one GPU type at one micro-batch, shared by every replica and stage that runs them: a search
  // at 16,384 GPUs would otherwise price the same layers on each of thousands of replicas.
  std::map<std::pair<int, int>, std::vector<double>> compute_s; // (gpu index, micro-batch) -> per layer
  auto layer_compute_s = [&](int gpu_index, int mb) -> const std::vector<double>& {
    auto [it, added] = compute_s.try_emplace({gpu_index, mb});
    if (added)
      it->second = layer_compute_seconds(cluster.gpus()[gpu_index], mb, kinds, compute);
    return it->second;
  };

  prefix_s_.assign(shape.pp, std::vector<double>(layer_count + 1, 0));
  data_parallel_bytes_.resize(shape.pp);
  for (int s = 0; s < shape.pp; ++s)
    data_parallel_bytes_[s] = data_parallel_communicator_bytes(shape, cluster, s);
  stage_capacity_bytes_.assign(shape.pp, std::numeric_limits<double>::infinity());
  for (int s = 0; s < shape.pp; ++s) {
    std::vector<double> slowest(layer_count, 0);
    std::set<std::tuple<int, std::vector<int>, std::vector<double>>> seen; // replicas already counted
    for (int r = 0; r < shape.dp; ++r) {
      const int mb = shape.micro_batch[r];
      std::vector<int> group, experts; // this replica's TP group; its expert-parallel group (TP rank 0)
      for (int q = r - shape.expert_rank(r); q < r - shape.expert_rank(r) + shape.ep; ++q)
        experts.push_back(shape.device(s, q, 0));
      std::set<int> gpu_types; // the group's members are often of one type
      for (int t = 0; t < shape.tp; ++t) {
        group.push_back(shape.device(s, r, t));
        stage_capacity_bytes_[s] = std::min(stage_capacity_bytes_[s], problem.memory_capacity(group.back()));
        gpu_types.insert(cluster.device(group.back()).gpu);
      }
      // Profiled layer times hold their tensor-parallel all-reduces already. Layers of one kind communicate
      // alike: each kind's collectives are priced once per group.
      const bool profiled = compute.profiled(cluster, group, shape.tp);
      std::vector<double> communication_s;
      for (int first : kind_firsts)
        communication_s.push_back(communication_seconds(layers[first], group, experts, mb, profiled));
      // Replicas with the same batch, GPU types and collective times take as long, layer by layer.
      if (!seen.emplace(mb, std::vector<int>(gpu_types.begin(), gpu_types.end()), communication_s).second)
        continue;
      std::vector<const std::vector<double>*> per_type;
      for (int gpu_index : gpu_types)
        per_type.push_back(&layer_compute_s(gpu_index, mb));
      for (int l = 0; l < layer_count; ++l) {
        double compute_max_s = 0;
        for (const std::vector<double>* seconds : per_type)
          compute_max_s = std::max(compute_max_s, (*seconds)[l]);
        slowest[l] = std::max(slowest[l], compute_max_s + communication_s[kind_index[kinds[l]]]);
      }
    }
    for (int l = 0; l < layer_count; ++l)
      prefix_s_[s][l + 1] = prefix_s_[s][l] + slowest[l];
  }
}

std::vector<double> PipelineCosts::layer_compute_seconds(const GpuSpec& gpu, int mb, const std::vector<int>& kinds,
                                                         const costmodel::ComputeModel& compute) const
{
  const models::Workload& workload = *problem_.workload;
  const Plan& shape                = shape_;
  // DeepSpeed's BF16_Optimizer adds each layer's gradients into its fp32 copy after every micro-batch.
  const bool accumulates = uses_bf16_optimizer(shape.framework, shape.dtype, shape.zero_stage);
  // A profile times each layer apart; otherwise a layer prices as the first of its kind.
  const bool by_kind = !compute.profiled(gpu, shape.tp);
  std::vector<double> seconds;
  for (int l = 0; l < static_cast<int>(kinds.size()); ++l) {
    if (by_kind && kinds[l] != l) {
      seconds.push_back(seconds[kinds[l]]);
      continue;
    }
    const bool sp = shape.splits_sequence();
    seconds.push_back(
        compute.layers_seconds(gpu, workload, l, l + 1, shape.tp, mb, shape.dtype, false, false, sp) +
        compute.layers_seconds(gpu, workload, l, l + 1, shape.tp, mb, shape.dtype, true, shape.recompute, sp) +
        (shape.selective_recompute
             ? compute.selective_recompute_seconds(gpu, workload, l, l + 1, shape.tp, mb, shape.dtype, sp)
             : 0) +
        (accumulates ? fp32_accumulation_seconds(compute, gpu, workload, l, l + 1, shape.tp, shape.ep) : 0));
  }
  return seconds;
}

double PipelineCosts::communication_seconds(const models::Layer& layer, const std::vector<int>& group,
                                            const std::vector<int>& experts, int mb, bool profiled) const
{
  const Cluster& cluster        = *problem_.cluster;
  const double activation_scale = dtype_bytes(shape_.dtype) / 2.0;
  const auto algorithm          = static_cast<costmodel::Algorithm>(shape_.collective_algorithm);
  // Each communication happens in the forward, the backward, and a recomputing backward's rerun forward.
  const int passes = shape_.recompute ? 3 : 2;
  double seconds   = 0;
  if (layer.operators.empty()) { // a layer list's layer: its all-reduces of its output
    const int reductions = profiled ? 0 : tensor_parallel_all_reduces(layer, shape_);
    return reductions * costmodel::collective_seconds(cluster, group, costmodel::CollectiveOp::all_reduce, algorithm,
                                                      layer.activation_bytes_per_sample * mb * activation_scale);
  }
  for (const models::OperatorGroup& part : models::communication_groups(layer.operators, shape_.tp, shape_.ep)) {
    if (part.all_reduce && !profiled) { // profiled layer times hold their all-reduces already
      const double bytes =
          part.all_reduce_bytes_per_sample > 0 ? part.all_reduce_bytes_per_sample : layer.activation_bytes_per_sample;
      seconds += passes * costmodel::collective_seconds(cluster, group, costmodel::CollectiveOp::all_reduce,
                                                        algorithm, bytes * mb * activation_scale);
    }
    if (part.all_to_all_bytes_per_sample > 0) // 1/tp of the tokens per rank under sequence parallelism
      seconds += passes * costmodel::all_to_all_seconds(cluster, experts,
                                                        part.all_to_all_bytes_per_sample * mb * activation_scale /
                                                            (shape_.splits_sequence() ? shape_.tp : 1));
  }
  return seconds;
}

bool PipelineCosts::fits(int stage, int first, int end) const
{
  for (int r = 0; r < shape_.dp; ++r) {
    if (r > 0 && shape_.micro_batch[r] == shape_.micro_batch[r - 1] && shape_.grad_accum[r] == shape_.grad_accum[r - 1])
      continue; // same batch, same memory
    const DeviceMemory m =
        stage_device_memory(shape_, problem_, stage, first, end, r, data_parallel_bytes_[stage], &kinds_);
    if (m.total_bytes() + problem_.workspace_bytes.value_or(0) > stage_capacity_bytes_[stage])
      return false;
  }
  return true;
}

double PipelineCosts::stage_seconds(int stage, int first, int end) const
{
  if (!fits(stage, first, end))
    return std::numeric_limits<double>::infinity();
  return compute_seconds(stage, first, end);
}

double PipelineCosts::boundary_seconds(int stage, int cut) const
{
  const auto& layer = problem_.workload->layers[cut - 1];
  // Replicas with different micro-batches send different sizes; the largest sets the pace.
  const int mb          = *std::max_element(shape_.micro_batch.begin(), shape_.micro_batch.end());
  const int seq_len     = problem_.workload->seq_len;
  const double activation = boundary_bytes(layer, seq_len, shape_, mb, false);
  const double gradient   = boundary_bytes(layer, seq_len, shape_, mb, true);
  // Cuts after layers of one kind send as much: each stage's boundary is timed once per size.
  const auto [known, added] = boundary_s_.try_emplace({stage, activation, gradient}, 0.0);
  if (!added)
    return known->second;
  std::vector<std::pair<int, int>> forward, backward;
  for (int r = 0; r < shape_.dp; ++r)
    for (int t = 0; t < shape_.tp; ++t) {
      forward.emplace_back(shape_.device(stage, r, t), shape_.device(stage + 1, r, t));
      backward.emplace_back(shape_.device(stage + 1, r, t), shape_.device(stage, r, t));
    }
  return known->second = costmodel::concurrent_transfers_seconds(*problem_.cluster, forward, activation) +
                         costmodel::concurrent_transfers_seconds(*problem_.cluster, backward, gradient);
}

StageCostModel PipelineCosts::model() const
{
  // Memory grows with the layers a stage holds (their states, the activations they keep): fitting is monotone.
  return StageCostModel{[this](int stage, int first, int end) { return stage_seconds(stage, first, end); },
                        [this](int stage, int cut) { return boundary_seconds(stage, cut); },
                        [this](int stage, int first, int end) { return compute_seconds(stage, first, end); }};
}

} // namespace hetsim::strategies
