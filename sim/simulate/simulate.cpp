#include "sim/simulate/simulate.hpp"

#include "core/error.hpp"
#include "models/workload.hpp"
#include "sim/replay/durations.hpp"
#include "sim/replay/replay.hpp"
#include "sim/report/memory_track.hpp"
#include "sim/simulate/steady_state.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/lower.hpp"

#include <algorithm>

namespace hetsim::sim {
namespace {

/// How much faster than a device's share of its node's NIC a port must be for a folded tensor-parallel group's
/// collectives to take the alpha-beta time instead of flows.
constexpr double kPortOverNicShare = 8;

} // namespace

ReplayOptions replay_options_for(const strategies::Plan& plan, const strategies::Problem& problem,
                                 const strategies::Schedule& schedule, const SimOptions& options)
{
  if (problem.cluster == nullptr || problem.workload == nullptr)
    throw InternalError("simulate: the problem has no cluster or no workload");
  const Cluster& cluster = *problem.cluster;
  ReplayOptions replay_options;
  replay_options.compute_seconds =
      compute_time_model(cluster, *problem.workload, plan, options.calibration, options.profile);
  replay_options.pipelined_rings = options.pipelined_rings;
  replay_options.progress        = options.progress;
  replay_options.slowdowns       = options.slowdowns;
  // A profiled layer's time holds its tensor-parallel all-reduces, their calls' overhead included: those take no
  // time of their own. They stay in the Schedule, so their members still meet.
  const auto profiled = inside_layer_profile(cluster, schedule, plan, options.profile);
  std::function<std::optional<double>(const strategies::Collective&)> intra_node;
  if (options.analytic_intra_node)
    intra_node = analytic_intra_node_time(cluster, plan.nccl);
  // A folded tensor-parallel group fills one node of identical GPUs and its members arrive together (fold.hpp):
  // its collectives take the ring's alpha-beta time on the node's ports when those ports are so much faster than
  // a device's share of the NIC that the NIC-bound traffic beside the collectives takes little of them (DGX A100:
  // 300 GB/s against 200 / 8; H100: 450 against 400 / 8). On slower ports they stay flows.
  const bool folded_tp = schedule.fold && static_cast<int>(schedule.fold->tp_ranks.size()) < plan.tp;
  const auto one_node  = analytic_intra_node_time(cluster, plan.nccl);
  const auto fast_ports = [&cluster](int device) {
    const Node& node = cluster.node_of(device);
    return node.intra.bandwidth_bytes_per_s >=
           kPortOverNicShare * node.nic.bandwidth_bytes_per_s / static_cast<double>(node.devices.size());
  };
  replay_options.analytic_collective_seconds = [&schedule, profiled, intra_node, folded_tp, one_node,
                                                fast_ports](const strategies::Collective& collective) {
    if (profiled(collective))
      return std::optional<double>(0.0);
    // A call NCCL chooses for inside one node takes the time NCCL's tuner expects, not flows on nominal ports.
    if (collective.algorithm == static_cast<int>(strategies::CollectiveAlgorithm::nccl))
      if (const auto seconds = one_node(collective))
        return seconds;
    if (folded_tp && schedule.tasks[collective.tasks.front()].stream == strategies::Stream::tensor_parallel &&
        fast_ports(collective.devices.front()))
      return one_node(collective);
    return intra_node ? intra_node(collective) : std::nullopt;
  };
  // A ring the fold replays in part stands for identical members behind NICs whose bandwidth the fold already
  // divides by the traffic it does not replay: on ports that fast, its edges' time is the NIC's, and its 2(n - 1)
  // steps are one step repeated. They move as one flow per phase, so that the replay's cost follows the
  // replayed members and not n (a 1,024-member ring stepped one by one took 2,046 flows per edge). On slower
  // ports, which tensor-parallel traffic shares in the replay, the steps stay.
  replay_options.folded_ring_in_one_flow = [fast_ports](const strategies::Collective& collective) {
    if (collective.member_count() <= static_cast<int>(collective.devices.size()))
      return false;
    return std::all_of(collective.devices.begin(), collective.devices.end(), fast_ports);
  };
  replay_options.collective_compute_shares = collective_compute_shares(cluster, plan.nccl);
  const auto call = collective_call_time(cluster, options.calibration, plan.nccl);
  replay_options.collective_overhead_seconds = [profiled, call](const strategies::Collective& collective) {
    return profiled(collective) ? 0.0 : call(collective);
  };
  return replay_options;
}

namespace {

/// Replays `schedule` with `replay_options`, filling `link_usage` when asked. A folded schedule replays on links
/// narrowed for the traffic of the devices it does not replay.
std::vector<TaskTiming> replay_schedule(const Cluster& cluster, const strategies::Schedule& schedule,
                                        ReplayOptions replay_options, std::vector<LinkUsage>* link_usage)
{
  replay_options.link_usage = link_usage;
  return schedule.fold
             ? replay_isolated(strategies::folded_cluster(cluster, *schedule.fold), schedule, replay_options)
             : replay_isolated(cluster, schedule, replay_options);
}

/// The timings of `schedule` from a replay of its steady state (steady_state.hpp), when the plan folds so and the
/// steady state is found; `repeated` says what was replayed either way.
std::optional<std::vector<TaskTiming>> replay_steady_state(const strategies::Plan& plan,
                                                           const strategies::Problem& problem,
                                                           const strategies::Schedule& schedule,
                                                           const SimOptions& options,
                                                           std::vector<LinkUsage>* link_usage,
                                                           std::optional<RepeatedMicroBatches>& repeated)
{
  const int replayed = steady_state_micro_batches(plan);
  if (replayed == 0 || options.exact || options.slowdowns)
    return std::nullopt;
  const int repeats                       = plan.grad_accum.front() - replayed;
  const strategies::Plan shorter          = with_micro_batches(plan, replayed);
  const strategies::Schedule shorter_tasks = strategies::lower_with_fold(shorter, problem, schedule.fold);
  ReplayOptions replay_options            = replay_options_for(shorter, problem, shorter_tasks, options);
  replay_options.repeated_window = [&shorter_tasks, repeats](const std::vector<TaskTiming>& timings) {
    const auto steady = find_steady_state(shorter_tasks, timings);
    return steady ? std::optional(repeated_window(*steady, repeats)) : std::nullopt;
  };
  const auto timings = replay_schedule(*problem.cluster, shorter_tasks, replay_options, link_usage);
  repeated.emplace(RepeatedMicroBatches{replayed, plan.grad_accum.front(), 0});
  const auto steady = find_steady_state(shorter_tasks, timings);
  if (!steady)
    return std::nullopt;
  auto full = repeat_steady_state(shorter_tasks, timings, *steady, repeats, schedule);
  if (full)
    repeated->period_s = steady->period_s;
  return full;
}

} // namespace

SimResult simulate(const strategies::Plan& plan, const strategies::Problem& problem,
                   const strategies::Schedule& schedule, const SimOptions& options)
{
  const Cluster& cluster = *problem.cluster;
  std::vector<LinkUsage> link_usage;
  std::vector<LinkUsage>* usage = options.links ? &link_usage : nullptr;
  SimResult result;
  auto timings = replay_steady_state(plan, problem, schedule, options, usage, result.repeated);
  if (!timings)
    timings = replay_schedule(cluster, schedule, replay_options_for(plan, problem, schedule, options), usage);

  result.report = make_report(plan, problem, schedule, *timings);
  if (options.links)
    result.report.links = summarize_links(link_usage, result.report.iteration_time_s);
  if (options.trace) {
    result.trace = make_trace(cluster, schedule, *timings, problem.workload->seq_len, problem.dtype,
                              options.trace_devices);
    result.trace.memory = memory_track(schedule, *timings, result.report.devices);
    if (!options.trace_devices.empty())
      traces::keep_devices(result.trace, options.trace_devices);
  }
  return result;
}

} // namespace hetsim::sim
