#pragma once
/// The band around a plan's predicted step time (costmodel/prediction_band.hpp), from what priced it: each GPU
/// type the plan runs on, the attention kernel that runs there, and whether its traffic leaves a node.

#include "costmodel/compute.hpp"
#include "costmodel/prediction_band.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

namespace hetsim::strategies {

/// `exposed_comm_share`: of the step, the most any device spends in communication with its compute idle (the
/// simulated report's), which widens the band where that traffic crosses NCCL's sockets.
costmodel::PredictionBand plan_band(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute,
                                    double iteration_s, double exposed_comm_share = 0);

} // namespace hetsim::strategies
