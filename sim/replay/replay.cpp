#include "sim/replay/replay.hpp"

#include "core/error.hpp"
#include "costmodel/nccl_occupancy.hpp"
#include "sim/platform/platform.hpp"
#include "sim/replay/collective_flows.hpp"
#include "sim/replay/counter.hpp"
#include "sim/replay/engine.hpp"
#include "sim/replay/isolate.hpp"
#include "sim/replay/network.hpp"
#include "strategies/lowering/fold.hpp"
#include "traces/task_event.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace hetsim::sim {
namespace {

namespace sg4 = simgrid::s4u;
using strategies::Schedule;
using strategies::Stream;
using strategies::Task;
using strategies::TaskKind;
using strategies::is_compute;
using strategies::is_p2p;

constexpr int kOrderedStreams = 5; // all but the pipeline run in queue order
constexpr double kNotYet      = -1;

/// A task name with its " r<replica> t<rank> " (`from`, which ends with a space) replaced by `to` (also).
std::string renamed(std::string name, const std::string& from, const std::string& to)
{
  name += ' '; // the part may end the name
  if (const auto at = name.find(from); at != std::string::npos)
    name.replace(at, from.size(), to);
  name.pop_back();
  return name;
}

std::string describe(const Schedule& schedule, int id)
{
  return "task " + std::to_string(id) + " '" + schedule.task_name(id) + "' on device " +
         std::to_string(schedule.tasks[id].device);
}

/// The state of one replay: dependency counts, readiness, running collectives, timings.
class Replayer {
public:
  Replayer(const Platform& platform, const Schedule& schedule, const ReplayOptions& options);

  /// Creates the actors; the engine runs them afterwards.
  void start();
  /// Adds every flow to `recorder`; call before start().
  void record_usage(LinkUsageRecorder* recorder) { network_.record_usage(recorder); }
  /// After the run: the timings, or InternalError when some task never ended.
  std::vector<TaskTiming> take_timings();

private:
  void run_stream(int device, int stream);
  void run_collective_member(int id);
  void run_transfer(int send_id);
  void complete(int id);
  void on_ready(int id);
  /// Starts an endless execution on `device`'s host that takes `share` of it from the compute while it runs.
  sg4::ExecPtr hold(int device, double share);

  const Platform& platform_;
  const Schedule& schedule_;
  Network network_;

  std::vector<double> durations_;        ///< compute tasks: seconds
  std::vector<char> slowed_;             ///< per device: its host runs under a speed profile
  std::vector<double> analytic_seconds_; ///< per collective: analytic duration, or -1 for flows
  std::vector<double> overhead_seconds_; ///< per collective: software cost each member waits first
  std::vector<char> one_flow_rings_;     ///< per collective: ReplayOptions::folded_ring_in_one_flow
  std::vector<double> member_share_;     ///< collective members: the share of their GPU they hold while running
  std::vector<char> contended_;          ///< per device: some collective member holds part of its GPU
  std::vector<int> successor_offsets_;   ///< CSR: successors of task i are successors_[offsets[i], offsets[i+1])
  std::vector<int> successors_;
  std::vector<int> pending_;             ///< deps not ended yet
  std::vector<TaskTiming> timings_;
  std::vector<char> ended_;
  std::vector<Counter> stream_wake_;     ///< per device and ordered stream: raised when one of its tasks gets ready
  std::vector<int> member_index_;        ///< collectives: the task's index among the members
  std::vector<int> channel_;             ///< sends: their (source, destination) channel
  std::vector<int> place_in_channel_;    ///< sends: how many sends of the same channel were issued before
  std::vector<Counter> channel_done_;    ///< per channel: transfers finished
  bool pipelined_rings_;
  std::function<void(long long, long long)> progress_;
  long long ended_count_ = 0;
  std::vector<std::unique_ptr<CollectiveRun>> runs_; ///< per collective, while some member is inside
};

Replayer::Replayer(const Platform& platform, const Schedule& schedule, const ReplayOptions& options)
    : platform_(platform), schedule_(schedule), network_(platform, schedule.device_count),
      pipelined_rings_(options.pipelined_rings), progress_(options.progress)
{
  const std::size_t count = schedule.tasks.size();
  durations_.assign(count, 0);
  slowed_.assign(schedule.device_count, 0);
  for (int d = 0; d < schedule.device_count; ++d)
    slowed_[d] = find_slowdown(platform.slowdowns(), Slowdown::Part::device, d) != nullptr;
  member_index_.assign(count, -1);
  member_share_.assign(count, 0);
  contended_.assign(schedule.device_count, 0);
  for (const Task& task : schedule.tasks) {
    if (!is_compute(task.kind))
      continue;
    const double seconds = options.compute_seconds(task);
    if (!(seconds >= 0) || !std::isfinite(seconds))
      throw InternalError("replay: " + describe(schedule, task.id) + " has duration " + std::to_string(seconds));
    durations_[task.id] = seconds;
  }
  analytic_seconds_.assign(schedule.collectives.size(), -1);
  overhead_seconds_.assign(schedule.collectives.size(), 0);
  one_flow_rings_.assign(schedule.collectives.size(), 0);
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
    const auto& collective = schedule.collectives[c];
    if (options.folded_ring_in_one_flow)
      one_flow_rings_[c] = options.folded_ring_in_one_flow(collective);
    // A tensor-parallel collective's compute waits for it: nothing of the device's runs beside it.
    const bool beside_compute = collective.devices.size() > 1 && !collective.tasks.empty() &&
                                schedule.tasks[collective.tasks.front()].stream != Stream::tensor_parallel;
    const std::vector<double> shares = options.collective_compute_shares && beside_compute
                                           ? options.collective_compute_shares(collective)
                                           : std::vector<double>(collective.tasks.size(), 0.0);
    if (shares.size() != collective.tasks.size())
      throw InternalError("replay: collective " + std::to_string(c) + " got " + std::to_string(shares.size()) +
                          " compute shares for " + std::to_string(collective.tasks.size()) + " members");
    for (std::size_t i = 0; i < collective.tasks.size(); ++i) {
      const int id      = collective.tasks[i];
      member_index_[id] = static_cast<int>(i);
      member_share_[id] = shares[i];
      contended_[schedule.tasks[id].device] |= shares[i] > 0;
    }
    if (options.collective_overhead_seconds && collective.devices.size() > 1)
      overhead_seconds_[c] = options.collective_overhead_seconds(collective);
    if (!options.analytic_collective_seconds || collective.devices.size() <= 1)
      continue;
    const std::optional<double> analytic = options.analytic_collective_seconds(collective);
    if (!analytic)
      continue;
    const double seconds = *analytic;
    if (!(seconds >= 0) || !std::isfinite(seconds))
      throw InternalError("replay: collective " + std::to_string(c) + " has analytic duration " +
                          std::to_string(seconds));
    analytic_seconds_[c] = seconds;
  }

  successor_offsets_.assign(count + 1, 0);
  for (const Task& task : schedule.tasks)
    for (int dep : task.deps)
      ++successor_offsets_[dep + 1];
  for (std::size_t i = 0; i < count; ++i)
    successor_offsets_[i + 1] += successor_offsets_[i];
  successors_.resize(successor_offsets_[count]);
  std::vector<int> fill(successor_offsets_.begin(), successor_offsets_.end() - 1);
  pending_.assign(count, 0);
  for (const Task& task : schedule.tasks) {
    pending_[task.id] = static_cast<int>(task.deps.size());
    for (int dep : task.deps)
      successors_[fill[dep]++] = task.id;
  }
  // Sends from one device to the same peer share a channel and go out one after the other, in issue order, as
  // NCCL point-to-point operations on one communicator do: sharing the link instead would deliver every
  // micro-batch in flight at the same late time.
  channel_.assign(count, -1);
  place_in_channel_.assign(count, 0);
  std::map<std::pair<int, int>, int> channel_ids;
  std::vector<int> issued;
  for (int d = 0; d < schedule.device_count; ++d)
    for (int id : schedule.queues[d][static_cast<int>(Stream::pipeline)]) {
      const Task& task = schedule.tasks[id];
      if (task.kind != TaskKind::send)
        continue;
      const auto [it, inserted] =
          channel_ids.emplace(std::pair{d, schedule.tasks[task.match].device}, static_cast<int>(issued.size()));
      if (inserted)
        issued.push_back(0);
      channel_[id]          = it->second;
      place_in_channel_[id] = issued[it->second]++;
    }
  channel_done_ = std::vector<Counter>(issued.size());

  timings_.assign(count, TaskTiming{kNotYet, kNotYet});
  ended_.assign(count, 0);
  stream_wake_ = std::vector<Counter>(static_cast<std::size_t>(schedule.device_count) * kOrderedStreams);
  runs_.resize(schedule.collectives.size());
}

void Replayer::start()
{
  for (int d = 0; d < schedule_.device_count; ++d)
    for (int s = 0; s < kOrderedStreams; ++s) {
      if (schedule_.queues[d][s].empty())
        continue;
      const std::string name = "d" + std::to_string(d) + "." + std::string(strategies::stream_name(Stream(s)));
      sg4::Actor::create(name, platform_.host(d), [this, d, s] { run_stream(d, s); });
    }
  // Tasks without deps are ready at time 0; a send/recv pair ready on both sides starts moving now.
  for (const Task& task : schedule_.tasks)
    if (task.kind == TaskKind::send && pending_[task.id] == 0 && pending_[task.match] == 0)
      sg4::Actor::create("p2p" + std::to_string(task.id), platform_.host(task.device),
                         [this, id = task.id] { run_transfer(id); });
}

void Replayer::run_stream(int device, int stream)
{
  Counter& wake = stream_wake_[static_cast<std::size_t>(device) * kOrderedStreams + stream];
  for (int id : schedule_.queues[device][stream]) {
    while (pending_[id] > 0)
      wake.wait_for(wake.value() + 1);
    const Task& task       = schedule_.tasks[id];
    timings_[id].start_s = sg4::Engine::get_clock();
    if (strategies::is_collective(task.kind))
      run_collective_member(id);
    else if (durations_[id] > 0 && (slowed_[device] || contended_[device]))
      sg4::this_actor::execute(durations_[id] * kHostSpeedFlops); // a speed profile or a hold stretches it
    else if (durations_[id] > 0)
      sg4::this_actor::sleep_for(durations_[id]);
    complete(id);
  }
}

void Replayer::run_collective_member(int id)
{
  const int c = schedule_.tasks[id].collective;
  if (!runs_[c])
    runs_[c] = std::make_unique<CollectiveRun>(schedule_.collectives[c], network_, analytic_seconds_[c],
                                               pipelined_rings_, one_flow_rings_[c]);
  CollectiveRun& run = *runs_[c];
  if (overhead_seconds_[c] > 0)
    sg4::this_actor::sleep_for(overhead_seconds_[c]);
  const sg4::ExecPtr held = member_share_[id] > 0 ? hold(schedule_.tasks[id].device, member_share_[id]) : nullptr;
  run.run_member(member_index_[id]);
  if (run.finished() == run.size()) // before anything that yields: another member would find it finished too
    runs_[c].reset();
  if (held)
    held->cancel();
}

sg4::ExecPtr Replayer::hold(int device, double share)
{
  // Longer than any replay: the member cancels it when its call ends.
  constexpr double kEndless = 1e9 * kHostSpeedFlops;
  // Against a computation of weight 1, a hold of weight share / (1 - share) leaves it 1 - share of the host;
  // holds of calls in flight together add their weights.
  const double weight = share / (1 - std::min(share, costmodel::kMostMultiprocessorsTaken));
  sg4::ExecPtr exec   = sg4::Exec::init()->set_flops_amount(kEndless)->set_host(platform_.host(device));
  exec->set_priority(weight);
  exec->start();
  return exec;
}

void Replayer::run_transfer(int send_id)
{
  const Task& send = schedule_.tasks[send_id];
  const int recv_id = send.match;
  Counter& channel  = channel_done_[channel_[send_id]];
  channel.wait_for(place_in_channel_[send_id]);
  // Both sides span the transfer itself: waiting for the peer or the channel is idle time, not communication.
  timings_[send_id].start_s = timings_[recv_id].start_s = sg4::Engine::get_clock();
  network_.transfer(send.device, schedule_.tasks[recv_id].device, send.bytes);
  channel.raise_to(place_in_channel_[send_id] + 1);
  complete(send_id);
  complete(recv_id);
}

void Replayer::complete(int id)
{
  const double now = sg4::Engine::get_clock();
  timings_[id].end_s = now;
  ended_[id]          = 1;
  if (progress_) {
    const long long total = static_cast<long long>(timings_.size());
    const long long done  = ++ended_count_;
    if (done * 100 / total != (done - 1) * 100 / total)
      progress_(done, total);
  }
  for (int k = successor_offsets_[id]; k < successor_offsets_[id + 1]; ++k) {
    const int next = successors_[k];
    if (--pending_[next] == 0)
      on_ready(next);
  }
}

void Replayer::on_ready(int id)
{
  const Task& task = schedule_.tasks[id];
  if (!is_p2p(task.kind)) {
    stream_wake_[static_cast<std::size_t>(task.device) * kOrderedStreams + static_cast<int>(task.stream)].increment();
    return;
  }
  if (pending_[task.match] != 0)
    return; // the other side will start the transfer when it gets ready
  const int send_id = task.kind == TaskKind::send ? id : task.match;
  sg4::Actor::create("p2p" + std::to_string(send_id), platform_.host(schedule_.tasks[send_id].device),
                     [this, send_id] { run_transfer(send_id); });
}

std::vector<TaskTiming> Replayer::take_timings()
{
  int stuck        = 0;
  int first_stuck  = -1;
  for (std::size_t id = 0; id < ended_.size(); ++id)
    if (!ended_[id]) {
      if (first_stuck < 0)
        first_stuck = static_cast<int>(id);
      ++stuck;
    }
  if (stuck == 0)
    return std::move(timings_);

  // Name the first task that is stuck, and why.
  const Task& task = schedule_.tasks[first_stuck];
  std::string why;
  if (timings_[first_stuck].start_s >= 0) {
    why = "it started but never ended (a collective whose members never all arrived?)";
  } else if (pending_[first_stuck] > 0) {
    for (int dep : task.deps)
      if (!ended_[dep]) {
        why = "it waits for " + describe(schedule_, dep);
        break;
      }
  } else if (is_p2p(task.kind)) {
    why = "its matching " + describe(schedule_, task.match) + " never got ready";
  } else {
    why = "a task ahead of it in its stream never ended";
  }
  // The last task's end, not the clock: a member's hold on its GPU runs on past a deadlock.
  double last_end_s = 0;
  for (const TaskTiming& timing : timings_)
    last_end_s = std::max(last_end_s, timing.end_s);
  throw InternalError("replay deadlocked after t = " + std::to_string(last_end_s) + " s: " +
                      std::to_string(stuck) + " of " + std::to_string(ended_.size()) + " tasks never ended; " +
                      describe(schedule_, first_stuck) + ": " + why);
}

/// `message` is a callable: naming a task costs a string, and millions of checks pass.
template <class Message>
void check(bool condition, const Message& message)
{
  if (!condition)
    throw InternalError("schedule: " + message());
}

} // namespace

void check_schedule(const Schedule& schedule, int device_count)
{
  const int count = static_cast<int>(schedule.tasks.size());
  check(schedule.device_count >= 0 && schedule.device_count <= device_count, [&] {
    return "device_count " + std::to_string(schedule.device_count) + " exceeds the cluster's " +
           std::to_string(device_count) + " devices";
  });
  check(static_cast<int>(schedule.queues.size()) == schedule.device_count, [&] {
    return "expected one queue set per device (" + std::to_string(schedule.device_count) + "), got " +
           std::to_string(schedule.queues.size());
  });
  std::vector<char> queued(count, 0);
  for (int d = 0; d < schedule.device_count; ++d)
    for (int s = 0; s < strategies::kStreamCount; ++s)
      for (int id : schedule.queues[d][s]) {
        check(id >= 0 && id < count, [&] {
          return "queues[" + std::to_string(d) + "][" + std::to_string(s) + "]: task id " + std::to_string(id) +
                 " out of range";
        });
        const Task& task = schedule.tasks[id];
        check(task.device == d && static_cast<int>(task.stream) == s, [&] {
          return describe(schedule, id) + " is queued on device " + std::to_string(d) + " stream " +
                 std::string(strategies::stream_name(Stream(s))) + " but belongs to stream " +
                 std::string(strategies::stream_name(task.stream));
        });
        check(!queued[id], [&] { return describe(schedule, id) + " is queued twice"; });
        queued[id] = 1;
      }
  for (int id = 0; id < count; ++id) {
    const Task& task = schedule.tasks[id];
    check(task.id == id, [&] { return "tasks[" + std::to_string(id) + "] has id " + std::to_string(task.id); });
    check(queued[id], [&] { return describe(schedule, id) + " is in no queue"; });
    for (int dep : task.deps)
      check(dep >= 0 && dep < count && dep != id,
            [&] { return describe(schedule, id) + " has an invalid dep " + std::to_string(dep); });
    const bool p2p = is_p2p(task.kind);
    check(p2p == (task.stream == Stream::pipeline),
          [&] { return describe(schedule, id) + ": send/recv tasks, and only they, belong on the pipeline stream"; });
    if (p2p) {
      check(task.match >= 0 && task.match < count, [&] { return describe(schedule, id) + " has no matching task"; });
      const Task& other = schedule.tasks[task.match];
      check(other.match == id && other.kind != task.kind && is_p2p(other.kind), [&] {
        return describe(schedule, id) + " and " + describe(schedule, task.match) + " do not match each other";
      });
      check(task.peer == other.device, [&] {
        return describe(schedule, id) + ": peer " + std::to_string(task.peer) + " is not its match's device";
      });
      check(task.device != other.device, [&] { return describe(schedule, id) + " sends to its own device"; });
    }
    if (strategies::is_collective(task.kind)) {
      check(task.collective >= 0 && task.collective < static_cast<int>(schedule.collectives.size()),
            [&] { return describe(schedule, id) + " refers to no collective"; });
    } else {
      check(is_compute(task.kind) || p2p, [&] { return describe(schedule, id) + " has an unknown kind"; });
    }
  }
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
    const auto& collective  = schedule.collectives[c];
    const std::string where = "collective " + std::to_string(c);
    check(!collective.devices.empty() && collective.devices.size() == collective.tasks.size(),
          [&] { return where + ": expected one task per member"; });
    check(strategies::is_collective(collective.kind), [&] { return where + " has a non-collective kind"; });
    constexpr int kLastAlgorithm = static_cast<int>(strategies::CollectiveAlgorithm::nccl);
    check(collective.algorithm >= 0 && collective.algorithm <= kLastAlgorithm,
          [&] { return where + ": unknown algorithm " + std::to_string(collective.algorithm); });
    std::vector<int> seen;
    for (std::size_t i = 0; i < collective.tasks.size(); ++i) {
      const int id = collective.tasks[i];
      check(id >= 0 && id < count, [&] { return where + ": task id " + std::to_string(id) + " out of range"; });
      const Task& task = schedule.tasks[id];
      check(task.collective == static_cast<int>(c) && task.kind == collective.kind &&
                task.device == collective.devices[i],
            [&] {
              return where + ": member " + std::to_string(i) + " (" + describe(schedule, id) +
                     ") does not match the collective (kind, device or index)";
            });
    }
    std::vector<int> devices = collective.devices;
    std::sort(devices.begin(), devices.end());
    check(std::adjacent_find(devices.begin(), devices.end()) == devices.end(),
          [&] { return where + ": a device appears twice among the members"; });
  }
}

std::vector<TaskTiming> replay(Engine& engine, const Platform& platform, const Schedule& schedule,
                               const ReplayOptions& options)
{
  check_schedule(schedule, platform.cluster().device_count());
  if (!options.compute_seconds)
    throw InternalError("replay: no compute time model given");
  if (!platform.slowdowns().empty() && schedule.fold)
    throw InternalError("replay: slowdowns on a folded schedule (a slowed device stands for no other)");
  Replayer replayer(platform, schedule, options);
  std::optional<LinkUsageRecorder> usage;
  if (options.link_usage)
    replayer.record_usage(&usage.emplace(platform));
  if (usage && options.repeated_window)
    usage->keep_flows();
  replayer.start();
  engine.run();
  auto timings = replayer.take_timings();
  if (!usage)
    return timings;
  *options.link_usage = usage->totals();
  if (options.repeated_window)
    if (const auto window = options.repeated_window(timings))
      add_repeated(*options.link_usage, usage->usage_between(window->from_s, window->to_s), window->repeats);
  return timings;
}

namespace {

/// Whether the replay's actors fit the process's memory mappings with SimGrid's stack guard pages: each guarded
/// stack takes two mappings (its allocation and its protected page), and Linux allows a process
/// vm.max_map_count of them (65,530 by default), which a replay of some 16,000 devices exceeds ("Failed to
/// protect stack"). Without guards the stacks are plain allocations, which the kernel merges. Counted: a sink per
/// device, an actor per stream with tasks, and a transfer in flight per device; half the limit stays for the rest
/// of the process.
bool stack_guards_fit(const Schedule& schedule)
{
  long long actors = 0;
  for (int d = 0; d < schedule.device_count; ++d) {
    if (schedule.fold && schedule.representative(d) != d)
      continue;
    actors += 2; // its inbox's sink and a transfer
    for (const auto& queue : schedule.queues[d])
      actors += queue.empty() ? 0 : 1;
  }
  long long limit = 65530;
  std::ifstream("/proc/sys/vm/max_map_count") >> limit;
  return 2 * actors < limit / 2;
}

} // namespace

std::vector<TaskTiming> replay_isolated(const Cluster& cluster, const Schedule& schedule,
                                        const ReplayOptions& options)
{
  check_schedule(schedule, cluster.device_count());
  // The child sends one timing per task, then (when asked) the links' usage.
  // A folded replay builds only the nodes its devices are on.
  std::vector<char> built_nodes;
  if (schedule.fold) {
    built_nodes.assign(cluster.nodes().size(), 0);
    for (int d = 0; d < schedule.device_count; ++d)
      if (schedule.representative(d) == d)
        built_nodes[cluster.device(d).node] = 1;
  }
  const bool guard_pages  = stack_guards_fit(schedule);
  const std::string bytes = run_isolated([&] {
    Engine engine(guard_pages);
    Platform platform(cluster, built_nodes, options.slowdowns ? *options.slowdowns : std::vector<Slowdown>{});
    std::vector<LinkUsage> usage;
    ReplayOptions child_options = options;
    child_options.link_usage    = options.link_usage ? &usage : nullptr;
    std::string result = to_bytes(replay(engine, platform, schedule, child_options));
    if (options.link_usage && schedule.fold) // after the replay has filled it
      unfold_link_usage(platform, *schedule.fold, usage);
    if (options.link_usage)
      result += link_usage_to_bytes(usage);
    return result;
  });
  const std::size_t timing_bytes = std::min(bytes.size(), schedule.tasks.size() * sizeof(TaskTiming));
  auto timings = from_bytes<TaskTiming>(std::string_view(bytes).substr(0, timing_bytes));
  if (options.link_usage)
    *options.link_usage = link_usage_from_bytes(std::string_view(bytes).substr(timing_bytes));
  if (timings.size() != schedule.tasks.size())
    throw InternalError("replay: expected " + std::to_string(schedule.tasks.size()) + " task timings, got " +
                        std::to_string(timings.size()));
  return timings;
}

traces::Trace make_trace(const Cluster& cluster, const Schedule& schedule, const std::vector<TaskTiming>& timings,
                         int seq_len, Dtype dtype, const std::vector<int>& devices)
{
  const auto wanted = [&](int device) {
    return devices.empty() || std::binary_search(devices.begin(), devices.end(), device);
  };
  HETSIM_ASSERT(timings.size() == schedule.tasks.size());
  traces::Trace trace;
  trace.source = "simulation";
  for (const Device& device : cluster.devices()) {
    const GpuSpec& gpu = cluster.gpu_of(device.id);
    trace.device_labels.push_back("dev" + std::to_string(device.id) + " " + gpu.name + " @ " +
                                  cluster.node_of(device.id).name);
    trace.devices.push_back(traces::TraceDevice{gpu.name, gpu.peak_flops(dtype)});
  }
  trace.events.reserve(schedule.tasks.size());
  for (const Task& task : schedule.tasks) {
    // The Schedule replayed is already at the run's scale.
    if (!schedule.fold && !wanted(task.device))
      continue;
    traces::TraceEvent event = traces::task_event(schedule, cluster, task, seq_len, 1.0);
    event.start_s            = timings[task.id].start_s;
    event.end_s              = timings[task.id].end_s;
    event.flops              = task.flops;
    trace.events.push_back(std::move(event));
  }
  if (schedule.fold) {
    // Devices a folded replay stood for did what their representative did: a copy of its events (no transfer
    // arrows, which pair tasks by id) under their own device.
    const strategies::Fold& fold = *schedule.fold;
    std::vector<std::vector<std::size_t>> events_of(schedule.device_count);
    for (std::size_t e = 0; e < trace.events.size(); ++e)
      events_of[trace.events[e].device].push_back(e);
    for (int device = 0; device < schedule.device_count; ++device) {
      const int representative = schedule.representative(device);
      if (representative < 0 || representative == device || !wanted(device))
        continue;
      // "fwd s1 r0 t0 mb3" of the representative is "fwd s1 r5 t3 mb3" here.
      const std::string from = " r" + std::to_string(fold.replica_of[representative]) + " t" +
                               std::to_string(fold.tp_rank_of[representative]) + " ";
      const std::string to =
          " r" + std::to_string(fold.replica_of[device]) + " t" + std::to_string(fold.tp_rank_of[device]) + " ";
      for (std::size_t e : events_of[representative]) {
        traces::TraceEvent copy = trace.events[e];
        copy.device             = device;
        copy.match              = -1;
        copy.name               = renamed(std::move(copy.name), from, to);
        trace.events.push_back(std::move(copy));
      }
    }
    std::erase_if(trace.events, [&](const traces::TraceEvent& e) { return !wanted(e.device); });
  }
  std::stable_sort(trace.events.begin(), trace.events.end(), [](const auto& a, const auto& b) {
    return std::tie(a.device, a.start_s, a.task_id) < std::tie(b.device, b.start_s, b.task_id);
  });
  return trace;
}

} // namespace hetsim::sim
