#pragma once
/// Fitting a GPU type's kernel constants (costmodel/kernel_time.hpp) to measured compute tasks: each task's
/// kernels come from its layers' operators (strategies/lowering/task_kernels.hpp), the model prices them, and
/// Levenberg-Marquardt (Eigen) moves the matrix-product ceiling, its per-tile depth overhead, the memory
/// efficiency, the launch gap and the host's dispatch cost until the log of predicted over measured time is
/// least in the squares. Tiles stay the family's: a GPU library's, not something a layer's times reveal.

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "costmodel/kernel_time.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

#include <map>
#include <string>
#include <vector>

namespace hetsim::traces {

/// A compute task's kernels and how long it took.
struct KernelTiming {
  std::vector<models::Kernel> kernels;
  double seconds = 0;
};

/// The constants that best explain `timings` on `gpu`, starting from `start`. Needs at least as many timings as
/// the five fitted constants.
costmodel::KernelConstants fit_kernel_constants(const GpuSpec& gpu, Dtype dtype,
                                                const std::vector<KernelTiming>& timings,
                                                costmodel::KernelConstants start);

/// A measured run and what it ran.
struct MeasuredSchedule {
  const Trace* trace                  = nullptr;
  const strategies::Schedule* schedule = nullptr; ///< lowered from the run's plan, scaled as the run was
  const models::Workload* workload    = nullptr;
  const Cluster* cluster              = nullptr;
  Dtype dtype                         = Dtype::fp16;
};

/// Per GPU type, constants fitted to the forward and backward tasks of `runs` whose layers have operators,
/// starting from the family's. A type with too few such tasks is left out, with a line in `skipped`.
std::map<std::string, costmodel::KernelConstants> fit_kernel_constants(const std::vector<MeasuredSchedule>& runs,
                                                                       std::vector<std::string>* skipped = nullptr);

} // namespace hetsim::traces
