#pragma once
/// The durations the replay takes from the cost model rather than from flows: compute tasks, and (optionally)
/// collectives that stay inside one node.

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"

#include <functional>
#include <optional>

namespace hetsim::sim {

/// Forward/backward: ComputeModel(calibration, profile).layers_seconds of the task's layers and pass (its equal
/// part of them, for pieces of split layers), or compute_seconds(gpu, flops, …) for a task without layers;
/// optimizer: optimizer_seconds(gpu, params). Every argument but `plan` must outlive the function.
std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster,
                                                                   const models::Workload& workload,
                                                                   const strategies::Plan& plan,
                                                                   const costmodel::Calibration* calibration,
                                                                   const costmodel::LayerProfile* profile = nullptr);

/// For a collective whose members share one node, costmodel::collective_seconds with its own algorithm (the α-β
/// twin of the flows); nothing for the others, which run as flows (`--analytic-intra-node`).
/// `nccl` is the environment of collectives NCCL chooses for (strategies::CollectiveAlgorithm::nccl).
std::function<std::optional<double>(const strategies::Collective&)>
analytic_intra_node_time(const Cluster& cluster, const costmodel::NcclEnvironment& nccl = {});

/// The software cost each member of a collective waits before its flows: the collective library's latency beyond
/// moving the bytes once (costmodel::library_latency_seconds over its calls), plus each call's calibrated
/// overhead when `calibration` fits one. Every argument must outlive the function.
std::function<double(const strategies::Collective&)> collective_call_time(const Cluster& cluster,
                                                                          const costmodel::Calibration* calibration,
                                                                          const costmodel::NcclEnvironment& nccl = {});

/// For each member of a collective (in the order of its devices), the share of its GPU NCCL's blocks hold while
/// the call runs (costmodel::collective_multiprocessor_shares over its replayed members). `cluster` must outlive
/// it.
std::function<std::vector<double>(const strategies::Collective&)>
collective_compute_shares(const Cluster& cluster, const costmodel::NcclEnvironment& nccl = {});

/// Whether a collective's time is already inside profiled layer times: a tensor-parallel all-reduce whose members'
/// GPUs `profile` covers at the plan's tp. Always false without a profile. `schedule` and `profile` must outlive it.
std::function<bool(const strategies::Collective&)> inside_layer_profile(const Cluster& cluster,
                                                                        const strategies::Schedule& schedule,
                                                                        const strategies::Plan& plan,
                                                                        const costmodel::LayerProfile* profile);

} // namespace hetsim::sim
