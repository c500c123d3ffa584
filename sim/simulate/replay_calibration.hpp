#pragma once
/// Link calibration through the simulator. The direct fit (traces::calibrate) reads every transfer as if it had
/// its link to itself; in a real calibration run transfers share links (two pipeline pairs over one WAN link,
/// a ring's steps queued behind one another), and the fit then mistakes sharing for a slow link. Here each
/// calibration run is replayed with the current fit, and every link class's α and β are scaled by its measured
/// over simulated communication time until the simulator reproduces the measurements, contention included.

#include "costmodel/calibration.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"
#include "traces/trace.hpp"

#include <string>
#include <vector>

namespace hetsim::sim {

/// One measured calibration run and what produced it.
struct CalibrationRun {
  const traces::Trace* measured         = nullptr;
  const strategies::Plan* plan          = nullptr;
  const strategies::Schedule* schedule  = nullptr;
  strategies::Problem problem; ///< its cluster is replaced by the calibrated one on every round
};

/// How far each link class moved, for the caller to report.
struct ReplayFitRound {
  std::vector<std::pair<std::string, double>> scale; ///< link class, measured / simulated communication time
};

/// Starts from `first_fit` (usually traces::calibrate's) and returns it with the link classes rescaled; compute
/// efficiencies are kept. Stops once every class is within `tolerance` of its measured time, or after `rounds`.
costmodel::Calibration fit_links_by_replay(const costmodel::Calibration& first_fit, const Cluster& cluster,
                                           std::vector<CalibrationRun> runs, int rounds = 6,
                                           double tolerance = 0.005, std::vector<ReplayFitRound>* log = nullptr);

} // namespace hetsim::sim
