#pragma once
/// The closed-form twin of the simulator: an iteration-time estimate of a plan in microseconds of CPU,
/// used inside searches. It composes costmodel's compute, α-β collective and pipeline (AMP eq. 5) formulas.

#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <vector>

namespace hetsim::strategies {

struct PlanEstimate {
  double iteration_time_s = 0;
  double pipeline_s       = 0; ///< slowest replica's pipeline (AMP eq. 5)
  double data_parallel_s  = 0; ///< gradient synchronisation left exposed after the pipeline
  double optimizer_s      = 0;
  std::vector<double> stage_seconds; ///< per stage, one micro-batch forward+backward plus its boundary transfers (slowest replica)
};

PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::Calibration* calibration = nullptr);
/// The same with a given compute model (calibration and per-layer profile); `compute` must outlive the call.
PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute);

} // namespace hetsim::strategies
