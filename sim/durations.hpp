#pragma once
/// The durations the replay takes from the cost model rather than from flows: compute tasks, and (optionally)
/// collectives that stay inside one node.

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "costmodel/calibration.hpp"
#include "strategies/schedule.hpp"

#include <functional>

namespace hetsim::sim {

/// Forward/backward: ComputeModel(calibration).compute_seconds(gpu, flops, dtype, samples * seq_len);
/// optimizer: optimizer_seconds(gpu, params). `cluster` and `calibration` must outlive the function.
std::function<double(const strategies::Task&)> compute_time_model(const Cluster& cluster, Dtype dtype, int seq_len,
                                                                   const costmodel::Calibration* calibration);

/// costmodel::collective_seconds of a collective with its own algorithm (the α-β twin of the flows).
std::function<double(const strategies::Collective&)> analytic_collective_time(const Cluster& cluster);

} // namespace hetsim::sim
