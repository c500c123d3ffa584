#include "reliability/checkpoint.hpp"

#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <numeric>

namespace hetsim::reliability {

double checkpoint_bytes(const models::Workload& workload, Dtype dtype)
{
  return workload.total_params() * (dtype_bytes(dtype) + strategies::optimizer_bytes_per_parameter(dtype));
}

std::vector<double> checkpoint_shares(const strategies::Plan& plan, const strategies::Problem& problem)
{
  const auto memory = strategies::plan_memory(plan, problem);
  std::vector<double> shares(problem.cluster->device_count(), 0.0);
  // What the replicas share: Megatron-LM's distributed checkpoint saves 1/dp of it from each replica (fully
  // parallel save, on by default: megatron/training/arguments.py:2169, core_v0.13.0); DeepSpeed's engine (under
  // DeepSpeed and Megatron-DeepSpeed) from its data-parallel writer, the first replica (deepspeed/runtime/
  // engine.py:1116, v0.17.4); FSDP shards all.
  const bool parallel_save = plan.framework.name == strategies::Framework::megatron;
  auto written = [&](double bytes, bool sharded, int replica) {
    if (sharded)
      return bytes;
    if (parallel_save)
      return bytes / plan.dp;
    return replica == 0 ? bytes : 0.0;
  };
  for (int stage = 0; stage < plan.pp; ++stage)
    for (int replica = 0; replica < plan.dp; ++replica)
      for (int t = 0; t < plan.tp; ++t) {
        const int d   = plan.device(stage, replica, t);
        const auto& m = memory[d];
        shares[d]     = written(m.optimizer_bytes, plan.zero_stage >= 1, replica) +
                    written(m.parameter_bytes, plan.zero_stage >= 3, replica);
      }
  // The memory model's states hold buffers a checkpoint does not (ZeRO-3's gathered layers, autocast's casts)
  // and, with expert parallelism, the first replica holds only its experts: the shares keep their proportions
  // and sum to one copy of the states.
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  const double bytes = checkpoint_bytes(*problem.workload, plan.dtype);
  for (double& share : shares)
    share = total > 0 ? share * bytes / total : 0;
  return shares;
}

CheckpointCosts checkpoint_costs(const FailureModel& model, const strategies::Plan& plan,
                                 const strategies::Problem& problem)
{
  const Cluster& cluster           = *problem.cluster;
  const std::vector<double> shares = checkpoint_shares(plan, problem);
  double write_s = std::accumulate(shares.begin(), shares.end(), 0.0) / model.storage_bytes_per_s;
  for (const Node& node : cluster.nodes()) {
    double node_bytes = 0;
    for (int d : node.devices)
      node_bytes += shares[d];
    // Storage traffic is not NCCL's: the NIC's line rate, where its transport carries less of it.
    const double nic = node.nic_nominal_bytes_per_s > 0 ? node.nic_nominal_bytes_per_s : node.nic.bandwidth_bytes_per_s;
    write_s = std::max(write_s, node_bytes / nic);
  }
  CheckpointCosts costs;
  if (model.async_checkpoint) {
    costs.blocking_s     = *std::max_element(shares.begin(), shares.end()) / model.host_bytes_per_s;
    costs.min_interval_s = write_s;
  } else {
    costs.blocking_s = write_s;
  }
  costs.restart_s = model.restart_s + write_s;
  costs.mtbf_s    = cluster_mtbf_s(model, cluster);
  return costs;
}

} // namespace hetsim::reliability
