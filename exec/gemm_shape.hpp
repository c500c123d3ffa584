#pragma once
/// The matrix multiplications an executor runs for a compute task, shaped like the layers' own: one
/// (M x K) * (K x N) per layer with K the layer's hidden size and K * N its weights on this device, M chosen so
/// the GEMM does the task's share of FLOPs for that layer. Shared by every executor so that they all run the
/// same work for the same task.

#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"

#include <vector>

namespace hetsim::exec {

struct Gemm {
  long m = 1;
  long k = 1;
  long n = 1;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n); }
};

/// GEMMs of a forward or backward task. `scale` multiplies hidden sizes (strategies/lowering/scale.hpp).
std::vector<Gemm> task_gemms(const strategies::Task& task, const models::Workload& model, int tp, double scale);

/// Elements an optimizer task updates.
long optimizer_elements(const strategies::Task& task, double scale);

} // namespace hetsim::exec
