#pragma once
/// The analytic twin of the simulator: an iteration-time estimate of a plan in microseconds of CPU, used inside
/// searches. It times the schedule's pipeline steps (costmodel/pipeline) with costmodel's compute and α-β
/// collective formulas, boundary transfers sharing the links every replica crosses at once.

#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

namespace hetsim::strategies {

struct PlanEstimate {
  double iteration_time_s = 0;
  double pipeline_s       = 0; ///< until the last stage of the slowest replica ends its last backward
  double data_parallel_s  = 0; ///< gradient synchronisation left exposed after the pipeline
  double optimizer_s      = 0; ///< what the optimizer step adds after that
};

PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::Calibration* calibration = nullptr);
/// The same with a given compute model (calibration and per-layer profile); `compute` must outlive the call.
PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute);

} // namespace hetsim::strategies
