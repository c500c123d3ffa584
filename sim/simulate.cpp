#include "sim/simulate.hpp"

#include "core/error.hpp"
#include "models/workload.hpp"
#include "sim/durations.hpp"
#include "sim/replay.hpp"

namespace hetsim::sim {

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
  const std::vector<TaskTiming> timings = replay_isolated(cluster, schedule, replay_options);

  SimResult result;
  result.report = make_report(plan, problem, schedule, timings);
  if (options.trace)
    result.trace = make_trace(cluster, schedule, timings);
  return result;
}

} // namespace hetsim::sim
