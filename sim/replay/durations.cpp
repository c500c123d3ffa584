#include "sim/replay/durations.hpp"

#include "costmodel/collective.hpp"
#include "costmodel/nccl_collective.hpp"
#include "costmodel/nccl_occupancy.hpp"
#include "costmodel/compute.hpp"
#include "costmodel/link_class.hpp"
#include "costmodel/list_collectives.hpp"
#include "strategies/lowering/fp32_accumulation.hpp"

namespace hetsim::sim {

using strategies::TaskKind;

namespace {

costmodel::CollectiveOp operation_of(const strategies::Collective& collective)
{
  if (collective.kind == TaskKind::reduce_scatter)
    return costmodel::CollectiveOp::reduce_scatter;
  if (collective.kind == TaskKind::all_gather)
    return costmodel::CollectiveOp::all_gather;
  if (collective.kind == TaskKind::all_to_all)
    return costmodel::CollectiveOp::all_to_all;
  return costmodel::CollectiveOp::all_reduce;
}

/// Whether `devices` sit on more than one node.
bool spans_nodes(const Cluster& cluster, const std::vector<int>& devices)
{
  for (int d : devices)
    if (cluster.device(d).node != cluster.device(devices[0]).node)
      return true;
  return false;
}

/// The members the cost model prices a collective over: its devices, or for a folded collective (Collective::
/// members) the real count made of its replayed devices, the first repeated: a0 ... a0 a1 ... ak-1. That ring's
/// edges are the replayed ring's and edges from a device to itself, which are never the slowest edge nor the
/// farthest link class, so the ring, one-node and latency formulas see the replayed ring at the real size.
std::vector<int> priced_members(const strategies::Collective& collective)
{
  const int n    = collective.member_count();
  const int kept = static_cast<int>(collective.devices.size());
  if (n == kept)
    return collective.devices;
  std::vector<int> members(n - kept + 1, collective.devices.front());
  members.insert(members.end(), collective.devices.begin() + 1, collective.devices.end());
  return members;
}

} // namespace

std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster,
                                                                   const models::Workload& workload,
                                                                   const strategies::Plan& plan,
                                                                   const costmodel::Calibration* calibration,
                                                                   const costmodel::LayerProfile* profile)
{
  return [&cluster, &workload, tp = plan.tp, cp = plan.cp, ep = plan.ep, dtype = plan.dtype,
          split      = plan.splits_sequence(),
          accumulate = strategies::uses_bf16_optimizer(plan.framework, plan.dtype, plan.zero_stage),
          model      = costmodel::ComputeModel(calibration, profile)](const strategies::Task& task) {
    const GpuSpec& gpu = cluster.gpu_of(task.device);
    if (task.kind == TaskKind::optimizer)
      return model.optimizer_seconds(gpu, task.params);
    if (task.first_layer >= 0 && task.layer_count > 0) {
      // A piece of a layer split around its communications is its share of the pass; a recomputing backward's
      // rerun forward may be a piece of its own. A context-parallel rank runs 1/cp of its sequences' tokens.
      const bool backward   = task.kind == TaskKind::backward && !task.recomputed;
      const int end         = task.first_layer + task.layer_count;
      const double samples  = static_cast<double>(task.samples) / cp;
      const double rerun    = task.recomputes_attention ? model.selective_recompute_seconds(
                                                              gpu, workload, task.first_layer, end, tp, samples,
                                                              dtype, split)
                                                        : 0;
      // Zero bubble splits a backward into its input gradients and, later, its weight gradients.
      const double weights = task.part == strategies::BackwardPart::whole
                                 ? 0
                                 : model.weight_gradient_seconds(gpu, workload, task.first_layer, end, tp, samples,
                                                                 dtype, split);
      // DeepSpeed's BF16_Optimizer adds the gradients a backward made into its fp32 copy.
      const double accumulation = accumulate && backward && task.part != strategies::BackwardPart::input_gradients
                                      ? strategies::fp32_accumulation_seconds(model, gpu, workload, task.first_layer,
                                                                              end, tp, ep)
                                      : 0;
      if (task.part == strategies::BackwardPart::weight_gradients)
        return (weights + accumulation) * task.share;
      return (model.layers_seconds(gpu, workload, task.first_layer, end, tp, samples, dtype, backward,
                                   backward && task.recomputes, split) +
              rerun - weights + accumulation) *
             task.share;
    }
    return model.compute_seconds(gpu, task.flops, dtype, static_cast<double>(task.samples) * workload.seq_len / cp);
  };
}

std::function<std::optional<double>(const strategies::Collective&)>
analytic_intra_node_time(const Cluster& cluster, const costmodel::NcclEnvironment& nccl)
{
  return [&cluster, nccl](const strategies::Collective& collective) -> std::optional<double> {
    if (spans_nodes(cluster, collective.devices))
      return std::nullopt;
    return costmodel::collective_seconds(cluster, priced_members(collective), operation_of(collective),
                                         static_cast<costmodel::Algorithm>(collective.algorithm), collective.bytes,
                                         nccl);
  };
}

std::function<double(const strategies::Collective&)> collective_call_time(const Cluster& cluster,
                                                                          const costmodel::Calibration* calibration,
                                                                          const costmodel::NcclEnvironment& nccl)
{
  return [&cluster, calibration, nccl](const strategies::Collective& collective) {
    const std::vector<int> members = priced_members(collective);
    const double calibrated =
        calibration ? collective.calls * costmodel::collective_overhead_seconds(cluster, *calibration, members) : 0;
    const auto algorithm = static_cast<costmodel::Algorithm>(collective.algorithm);
    const auto op        = operation_of(collective);
    double seconds       = calibrated + costmodel::library_latency_seconds(cluster, members, op, collective.calls,
                                                                           algorithm, nccl, collective.bytes);
    if (collective.list_api)
      seconds += costmodel::list_calls_seconds(cluster, members, op, collective.calls, collective.bytes);
    // Across nodes the flows move a call's bytes; what NCCL's pipeline loses on top comes here (within a node
    // the analytic time has it).
    if (algorithm == costmodel::Algorithm::nccl && op != costmodel::CollectiveOp::all_to_all &&
        spans_nodes(cluster, members))
      seconds += costmodel::nccl_pipeline_seconds(cluster, members, op, collective.bytes, nccl);
    return seconds;
  };
}

std::function<std::vector<double>(const strategies::Collective&)>
collective_compute_shares(const Cluster& cluster, const costmodel::NcclEnvironment& nccl)
{
  return [&cluster, nccl](const strategies::Collective& collective) {
    // Over the replayed members alone: the channels follow the links of their nodes, which the members a fold
    // leaves out share, not the count of members (repeating a replayed one would put them all on its node).
    return costmodel::collective_multiprocessor_shares(cluster, collective.devices, nccl);
  };
}

std::function<bool(const strategies::Collective&)> inside_layer_profile(const Cluster& cluster,
                                                                        const strategies::Schedule& schedule,
                                                                        const strategies::Plan& plan,
                                                                        const costmodel::LayerProfile* profile)
{
  return [&cluster, &schedule, model = costmodel::ComputeModel(nullptr, profile),
          tp = plan.tp](const strategies::Collective& collective) {
    return !collective.tasks.empty() &&
           schedule.tasks[collective.tasks.front()].stream == strategies::Stream::tensor_parallel &&
           model.profiled(cluster, collective.devices, tp);
  };
}

} // namespace hetsim::sim
