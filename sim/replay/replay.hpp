#pragma once
/// Replays a strategies::Schedule on the SimGrid platform of a cluster and records when every task ran.
///
/// Actors: per device, one actor per ordered stream (compute, tensor_parallel, data_parallel, expert_parallel,
/// context_parallel) runs its queue in order; a task starts when it reaches the head of its queue and all its deps have ended. Pipeline send/recv
/// tasks are unordered: once a send and its matching recv both have their deps met, an actor moves the bytes
/// (Network::transfer), after the earlier sends of the same (source, destination) channel in issue order
/// (NCCL runs a communicator's point-to-point operations in order); both tasks span the transfer itself (a side
/// that was ready earlier waits idle, like a stream blocked on its peer). Compute tasks sleep their duration
/// (ReplayOptions::compute_seconds); collectives run as flows (collective_flows.hpp), each member's task spanning
/// from its arrival to the end of its own part. Dependencies are counted, not polled: a task's completion wakes
/// only the actors that were waiting for it.

#include "core/cluster.hpp"
#include "sim/platform/link_usage.hpp"
#include "sim/platform/slowdowns.hpp"
#include "strategies/lowering/schedule.hpp"
#include "traces/trace.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace hetsim::sim {

class Engine;
class Platform;

/// When one task ran, in simulated seconds from the start of the iteration.
struct TaskTiming {
  double start_s = 0;
  double end_s   = 0;
};

/// A stretch of a replay that the iteration it stands for runs `repeats` more times (sim/simulate/steady_state.hpp).
struct RepeatedWindow {
  double from_s = 0;
  double to_s   = 0;
  int repeats   = 0;
};

struct ReplayOptions {
  /// Duration of a compute task (forward, backward, optimizer) on its device. Required.
  std::function<double(const strategies::Task&)> compute_seconds;
  /// When set and it gives a duration for a collective, that collective takes so long once all its members have
  /// arrived instead of running as flows (collectives inside one node with `--analytic-intra-node`; tensor-parallel
  /// all-reduces whose time a layer profile already holds).
  std::function<std::optional<double>(const strategies::Collective&)> analytic_collective_seconds;
  /// Ring phases move as one flow per member (see collective_flows.hpp) instead of step by step.
  bool pipelined_rings = false;
  /// When set and true for a collective, its rings whose every edge joins two nodes move each phase as one flow
  /// per member, as pipelined_rings does (simulate.cpp: a folded ring of members on fast ports).
  std::function<bool(const strategies::Collective&)> folded_ring_in_one_flow;
  /// When set, each member of a collective first waits this long: the software cost of the call
  /// (costmodel::LinkCalibration::collective_overhead_s).
  std::function<double(const strategies::Collective&)> collective_overhead_seconds;
  /// When set, the share of its GPU a collective's kernel holds on each member (in the order of its devices)
  /// while that member runs (costmodel::collective_multiprocessor_shares): the compute of that device, a SimGrid
  /// execution on its host, then shares the host with a hold of that weight and runs at the rest.
  std::function<std::vector<double>(const strategies::Collective&)> collective_compute_shares;
  /// When set, receives every link's bytes and busy time over the replay (LinkUsageRecorder), in
  /// Platform::links() order.
  std::vector<LinkUsage>* link_usage = nullptr;
  /// When set with link_usage, called in the simulation process with the replay's timings: the stretch of the
  /// replay that the iteration repeats, if any, whose links' usage link_usage then counts that many times more.
  std::function<std::optional<RepeatedWindow>(const std::vector<TaskTiming>&)> repeated_window;
  /// When set, devices and links slowed for a while (slowdowns.hpp), which replay_isolated builds its platform
  /// with (replay() takes them from the platform it is given); the schedule must not be folded.
  const std::vector<Slowdown>* slowdowns = nullptr;
  /// When set, called with the tasks ended so far and the total, at each hundredth (in the simulation process:
  /// it may only write to a file descriptor).
  std::function<void(long long done, long long total)> progress;
};

/// Checks that a schedule is well formed for a cluster of `device_count` devices: every task in exactly one queue
/// (its own device and stream), send/recv only on the pipeline stream and matched in pairs, collectives consistent
/// with their member tasks, deps in range. Throws InternalError naming the first problem.
void check_schedule(const strategies::Schedule& schedule, int device_count);

/// Replays `schedule` in `engine` (which must hold `platform` and nothing else) and runs the simulation to the
/// end. Returns one timing per task, indexed by task id. Throws InternalError when the schedule deadlocks.
std::vector<TaskTiming> replay(Engine& engine, const Platform& platform, const strategies::Schedule& schedule,
                               const ReplayOptions& options);

/// The same in a child process (run_isolated): builds an engine and the platform of `cluster` there. Callable
/// any number of times from one process.
std::vector<TaskTiming> replay_isolated(const Cluster& cluster, const strategies::Schedule& schedule,
                                        const ReplayOptions& options);

/// One trace event per task (source "simulation"), labelled with Schedule::task_name and annotated as a
/// measured trace is (traces/task_event.hpp), so that it can calibrate too; the devices' peak FLOP/s
/// are for `dtype`. A folded schedule's devices that were not replayed get copies of their representative's
/// events (its task ids, their own replica and rank in the names, no transfer arrows). `devices` (ascending),
/// when not empty, keeps those devices' events only.
traces::Trace make_trace(const Cluster& cluster, const strategies::Schedule& schedule,
                         const std::vector<TaskTiming>& timings, int seq_len, Dtype dtype,
                         const std::vector<int>& devices = {});

} // namespace hetsim::sim
