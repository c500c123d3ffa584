#include "sim/simulate.hpp"

#include "core/error.hpp"
#include "costmodel/link_class.hpp"
#include "models/workload.hpp"
#include "sim/durations.hpp"
#include "sim/replay.hpp"

namespace hetsim::sim {
namespace {

/// The calibrated software cost of each collective, by the slowest link class its ring crosses.
std::function<double(const strategies::Collective&)> calibrated_collective_overhead(
    const Cluster& cluster, const costmodel::Calibration& calibration)
{
  return [&cluster, &calibration](const strategies::Collective& collective) {
    return costmodel::collective_overhead_seconds(cluster, calibration, collective.devices);
  };
}

} // namespace

SimResult simulate(const strategies::Plan& plan, const strategies::Problem& problem,
                   const strategies::Schedule& schedule, const SimOptions& options)
{
  if (problem.cluster == nullptr || problem.workload == nullptr)
    throw InternalError("simulate: the problem has no cluster or no workload");
  const Cluster& cluster = *problem.cluster;

  ReplayOptions replay_options;
  replay_options.compute_seconds =
      compute_time_model(cluster, *problem.workload, plan, options.calibration, options.profile);
  replay_options.pipelined_rings = options.pipelined_rings;
  if (options.analytic_intra_node)
    replay_options.intra_node_collective_seconds = analytic_collective_time(cluster);
  if (options.calibration)
    replay_options.collective_overhead_seconds = calibrated_collective_overhead(cluster, *options.calibration);
  const std::vector<TaskTiming> timings = replay_isolated(cluster, schedule, replay_options);

  SimResult result;
  result.report = make_report(plan, problem, schedule, timings);
  if (options.trace)
    result.trace = make_trace(cluster, schedule, timings, problem.workload->seq_len, problem.dtype);
  return result;
}

} // namespace hetsim::sim
