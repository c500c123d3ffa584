#pragma once
/// Comparing a measured trace with the simulated replay of the same Schedule, task by task (shared task ids).

#include "traces/trace.hpp"

#include <map>
#include <string>
#include <vector>

namespace hetsim::traces {

struct KindError {
  int tasks = 0;
  double median_abs_error = 0; ///< of (predicted - measured) / measured durations
  double measured_s  = 0;      ///< summed durations
  double predicted_s = 0;
};

/// One kernel name's time summed over the trace (traces with kernels: `--trace-kernels`).
struct KernelError {
  int kernels        = 0; ///< launches in the measured trace
  double measured_s  = 0;
  double predicted_s = 0;
  double error       = 0; ///< (predicted - measured) / measured
};

struct Comparison {
  double measured_iteration_s  = 0; ///< latest end minus earliest start
  double predicted_iteration_s = 0;
  double iteration_error       = 0; ///< (predicted - measured) / measured
  std::map<std::string, KindError> by_kind;
  std::map<std::string, KernelError> by_kernel; ///< when both traces hold kernels
};

/// Throws InputError when the traces do not hold the same task ids (or their kernels not the same tasks' kernels), or when a task the measured trace gives bytes
/// for moved other bytes in the prediction (another plan, or another --scale).
Comparison compare_traces(const Trace& measured, const Trace& predicted);

/// Spearman rank correlation (ties get their mean rank); 0 when either side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

} // namespace hetsim::traces
