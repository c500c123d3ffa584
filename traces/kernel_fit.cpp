#include "traces/kernel_fit.hpp"

#include "core/error.hpp"
#include "strategies/lowering/task_kernels.hpp"

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetsim::traces {
namespace {

using costmodel::KernelConstants;

// Every constant is fitted through its logarithm, so that none can turn negative; the offsets let a constant
// that is truly zero (no dispatch cost worth the name) be reached. The ceiling and the memory efficiency are
// fractions of a catalog GPU's datasheet figures: a steep penalty on their logarithm above 0 keeps them at most
// 1, what the hardware allows (unbounded, the cuda executor's traces of GPT-2 medium on an H100 had fitted a ceiling of
// 1.40), and leaves a fit below 1 as it was.
constexpr double kSecondsFloor = 1e-9;
constexpr double kDepthFloor   = 1;
constexpr int kFitted          = 5;

Eigen::VectorXd to_parameters(const KernelConstants& c)
{
  Eigen::VectorXd x(kFitted);
  x << std::log(c.gemm_ceiling), std::log(c.k_overhead + kDepthFloor), std::log(c.memory_efficiency),
      std::log(c.launch_gap_s + kSecondsFloor), std::log(c.host_dispatch_s + kSecondsFloor);
  return x;
}

KernelConstants from_parameters(const Eigen::VectorXd& x, KernelConstants c, bool bounded)
{
  const double most   = bounded ? 1.0 : std::numeric_limits<double>::infinity();
  c.gemm_ceiling      = std::min(most, std::exp(x(0)));
  c.k_overhead        = std::max(0.0, std::exp(x(1)) - kDepthFloor);
  c.memory_efficiency = std::min(most, std::exp(x(2)));
  c.launch_gap_s      = std::max(0.0, std::exp(x(3)) - kSecondsFloor);
  c.host_dispatch_s   = std::max(0.0, std::exp(x(4)) - kSecondsFloor);
  return c;
}

/// Weight of the pull of each log-constant towards its starting value: small against a timing's log error, so
/// that the timings decide wherever they can, while a constant they cannot tell apart (memory efficiency when
/// products dominate every task) stays at its family's value instead of wandering off.
constexpr double kPrior = 0.05;
/// Weight of the penalty on a fraction's logarithm above 0 (a fraction above 1): far above any timing's pull.
constexpr double kBound = 100;

/// log(predicted / measured) per timing, then the pulls towards the start, in the form Eigen's NumericalDiff
/// and LevenbergMarquardt expect.
struct LogErrors {
  using Scalar       = double;
  using InputType    = Eigen::VectorXd;
  using ValueType    = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const GpuSpec* gpu;
  Dtype dtype;
  const std::vector<KernelTiming>* timings;
  KernelConstants start;
  Eigen::VectorXd origin; ///< to_parameters(start)
  bool bounded;           ///< the GPU's figures are its datasheet's: the fractions stay at most 1

  int inputs() const { return kFitted; }
  int values() const { return static_cast<int>(timings->size()) + kFitted + 2; }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& errors) const
  {
    const KernelConstants c = from_parameters(x, start, bounded);
    for (std::size_t i = 0; i < timings->size(); ++i) {
      const KernelTiming& t = (*timings)[i];
      errors(static_cast<Eigen::Index>(i)) =
          std::log(costmodel::kernels_seconds(*gpu, c, t.kernels, dtype) / t.seconds);
    }
    const auto last = static_cast<Eigen::Index>(timings->size()) + kFitted;
    for (int j = 0; j < kFitted; ++j)
      errors(last - kFitted + j) = kPrior * (x(j) - origin(j));
    // Above the datasheet's figure the fractions are clamped to 1; the penalty pushes the fit back below it.
    errors(last)     = bounded ? kBound * std::max(0.0, x(0)) : 0;
    errors(last + 1) = bounded ? kBound * std::max(0.0, x(2)) : 0;
    return 0;
  }
};

bool has_operators(const models::Workload& workload, const strategies::Task& task)
{
  if (task.first_layer < 0 || task.layer_count <= 0)
    return false;
  for (int l = task.first_layer; l < task.first_layer + task.layer_count; ++l)
    if (workload.layers[l].operators.empty())
      return false;
  return true;
}

} // namespace

KernelConstants fit_kernel_constants(const GpuSpec& gpu, Dtype dtype, const std::vector<KernelTiming>& timings,
                                     KernelConstants start)
{
  HETSIM_ASSERT(timings.size() >= static_cast<std::size_t>(kFitted));
  // A catalog GPU's figures are its datasheet's, which no kernel beats; a device the cluster file describes
  // (a CPU core for the cpu executor) has whatever figures its author wrote, and its fit is left free.
  const GpuSpec* sheet = find_catalog_gpu(gpu.name);
  const bool bounded   = sheet && sheet->peak_flops_fp16 == gpu.peak_flops_fp16 &&
                       sheet->memory_bandwidth_bytes_per_s == gpu.memory_bandwidth_bytes_per_s;
  LogErrors errors{&gpu, dtype, &timings, start, to_parameters(start), bounded};
  Eigen::NumericalDiff<LogErrors> differences(errors);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<LogErrors>> solver(differences);
  Eigen::VectorXd x = errors.origin;
  if (bounded) { // a start above the datasheet's figure starts at it
    x(0) = std::min(x(0), 0.0);
    x(2) = std::min(x(2), 0.0);
  }
  solver.minimize(x);
  return from_parameters(x, start, bounded);
}

std::map<std::string, KernelConstants> fit_kernel_constants(const std::vector<MeasuredSchedule>& runs,
                                                            std::vector<std::string>* skipped)
{
  std::map<std::string, std::vector<KernelTiming>> timings;
  std::map<std::string, std::pair<const GpuSpec*, Dtype>> gpus;
  for (const MeasuredSchedule& run : runs)
    for (const TraceEvent& event : run.trace->events) {
      if (event.kind != "forward" && event.kind != "backward")
        continue;
      if (event.task_id < 0 || event.task_id >= static_cast<int>(run.schedule->tasks.size()))
        continue;
      const strategies::Task& task = run.schedule->tasks[event.task_id];
      if (!strategies::is_compute(task.kind) || !has_operators(*run.workload, task) || event.end_s <= event.start_s)
        continue;
      const GpuSpec& gpu = run.cluster->gpu_of(task.device);
      timings[gpu.name].push_back(
          {strategies::task_kernels(task, *run.workload, run.schedule->tp, run.trace->scale, run.schedule->ep,
                                  run.schedule->sequence_parallel, run.schedule->cp),
           event.end_s - event.start_s});
      gpus[gpu.name] = {&gpu, run.dtype};
    }
  std::map<std::string, KernelConstants> fitted;
  for (const auto& [name, measured] : timings) {
    if (measured.size() < static_cast<std::size_t>(kFitted)) {
      if (skipped)
        skipped->push_back("kernel constants of " + name + ": " + std::to_string(measured.size()) +
                           " compute tasks with operators, at least " + std::to_string(kFitted) + " needed");
      continue;
    }
    const auto [gpu, dtype] = gpus.at(name);
    fitted[name]            = fit_kernel_constants(*gpu, dtype, measured, costmodel::kernel_constants(*gpu));
  }
  return fitted;
}

} // namespace hetsim::traces
