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

namespace hetsim::sim {

/// Forward/backward: ComputeModel(calibration).compute_seconds(gpu, flops, dtype, samples * seq_len), or, where
/// `profile` covers the device's GPU at the plan's tp, the profiled time of the task's layers (times the task's
/// share of them, for split layers); optimizer: optimizer_seconds(gpu, params). Every argument but `plan` must
/// outlive the function.
std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster,
                                                                   const models::Workload& workload,
                                                                   const strategies::Plan& plan,
                                                                   const costmodel::Calibration* calibration,
                                                                   const costmodel::LayerProfile* profile = nullptr);

/// costmodel::collective_seconds of a collective with its own algorithm (the α-β twin of the flows).
std::function<double(const strategies::Collective&)> analytic_collective_time(const Cluster& cluster);

} // namespace hetsim::sim
