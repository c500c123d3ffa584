#include "sim/simulate/steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace hetsim::sim {
namespace {

using strategies::Schedule;
using strategies::Task;

/// Micro-batches the replay runs beyond the pipeline's fill and drain and the periods it checks, for the pipeline
/// to settle into its period.
constexpr int kSettlingMicroBatches = 4;
/// Two times are equal when they differ by less than this share of the period. SimGrid's own timing precision is
/// 1e-9 s (its default precision/timing); over m - m' repeats the drift stays under this share of the iteration.
constexpr double kSamePeriodShare = 1e-6;
/// Periods tried, the longest-repeating first.
constexpr std::size_t kCandidatePeriods = 4;

/// Each task's place among its device's tasks of the same stream and micro-batch (-1 for those tied to none), in
/// queue order.
std::vector<int> places_of(const Schedule& schedule)
{
  std::vector<int> place(schedule.tasks.size(), 0);
  std::vector<int> count, touched; // per micro-batch + 1, reset after each queue
  for (const auto& streams : schedule.queues)
    for (const auto& queue : streams) {
      for (int id : queue) {
        const std::size_t slot = static_cast<std::size_t>(schedule.tasks[id].micro_batch + 1);
        if (count.size() <= slot)
          count.resize(slot + 1, 0);
        if (count[slot] == 0)
          touched.push_back(static_cast<int>(slot));
        place[id] = count[slot]++;
      }
      for (int slot : touched)
        count[slot] = 0;
      touched.clear();
    }
  return place;
}

/// The tasks of a schedule by device, stream, micro-batch and place (places_of), to find one from the others.
class TaskPlaces {
public:
  explicit TaskPlaces(const Schedule& schedule) : place_(places_of(schedule))
  {
    by_queue_.resize(schedule.queues.size() * strategies::kStreamCount);
    for (std::size_t d = 0; d < schedule.queues.size(); ++d)
      for (int s = 0; s < strategies::kStreamCount; ++s) {
        auto& by_micro_batch = by_queue_[d * strategies::kStreamCount + s];
        for (int id : schedule.queues[d][s]) {
          const std::size_t slot = static_cast<std::size_t>(schedule.tasks[id].micro_batch + 1);
          if (by_micro_batch.size() <= slot)
            by_micro_batch.resize(slot + 1);
          by_micro_batch[slot].push_back(id);
        }
      }
  }

  int place(int id) const { return place_[id]; }

  /// The task at `place` among micro-batch `micro_batch`'s on `device`'s `stream`; -1 when there is none.
  int find(int device, int stream, int micro_batch, int place) const
  {
    if (micro_batch < -1 || device < 0)
      return -1;
    const auto& by_micro_batch = by_queue_[static_cast<std::size_t>(device) * strategies::kStreamCount + stream];
    const std::size_t slot     = static_cast<std::size_t>(micro_batch + 1);
    if (slot >= by_micro_batch.size() || place >= static_cast<int>(by_micro_batch[slot].size()))
      return -1;
    return by_micro_batch[slot][place];
  }

  /// The same task `later` micro-batches later; -1 for a task tied to none, or when there is none.
  int successor(const Task& task, int later) const
  {
    if (task.micro_batch < 0)
      return -1;
    return find(task.device, static_cast<int>(task.stream), task.micro_batch + later, place_[task.id]);
  }

private:
  std::vector<int> place_;
  std::vector<std::vector<std::vector<int>>> by_queue_; ///< [device * streams + stream][micro-batch + 1]: ids
};

bool same_time(double a, double b, double tolerance_s)
{
  return std::abs(a - b) <= tolerance_s;
}

/// Candidate periods, each of some micro-batches: on each device's compute stream, the spacing of the first tasks
/// of micro-batches q apart that repeats longest (q up to kMaxPeriodMicroBatches); longest runs first, fewer
/// micro-batches first among equals. A pipeline's last stage shows its steady period early; earlier stages show
/// their fill's pace for a while.
std::vector<std::pair<int, double>> candidate_periods(const Schedule& schedule,
                                                      const std::vector<TaskTiming>& timings,
                                                      const TaskPlaces& places)
{
  struct Run {
    int length, micro_batches;
    double spacing_s;
  };
  std::vector<Run> runs;
  for (std::size_t d = 0; d < schedule.queues.size(); ++d) {
    std::vector<double> starts;
    for (int m = 0;; ++m) {
      const int id = places.find(static_cast<int>(d), static_cast<int>(strategies::Stream::compute), m, 0);
      if (id < 0)
        break;
      starts.push_back(timings[id].start_s);
    }
    for (int q = 1; q <= kMaxPeriodMicroBatches; ++q) {
      int run = 0;
      for (std::size_t i = 2 * q; i < starts.size(); ++i) {
        const double spacing = starts[i] - starts[i - q], before = starts[i - q] - starts[i - 2 * q];
        run = spacing > 0 && same_time(spacing, before, kSamePeriodShare * spacing) ? run + 1 : 0;
        if (run > 0)
          runs.push_back(Run{run, q, spacing});
      }
    }
  }
  std::stable_sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
    return a.length != b.length ? a.length > b.length : a.micro_batches < b.micro_batches;
  });
  std::vector<std::pair<int, double>> periods;
  for (const Run& run : runs) {
    const bool known = std::any_of(periods.begin(), periods.end(), [&](const auto& p) {
      return p.first == run.micro_batches && same_time(p.second, run.spacing_s, kSamePeriodShare * p.second);
    });
    if (!known)
      periods.emplace_back(run.micro_batches, run.spacing_s);
    if (periods.size() == kCandidatePeriods)
      break;
  }
  return periods;
}

/// When every kind of task a micro-batch repeats (same device, stream and place) has run once: a 1F1B pipeline's
/// first stage runs its first backward only once the first micro-batch has been through every stage and back.
double all_kinds_started_s(const Schedule& schedule, const std::vector<TaskTiming>& timings,
                           const TaskPlaces& places, int micro_batches)
{
  double latest_s = 0;
  for (const Task& task : schedule.tasks)
    if (task.micro_batch >= 0 && task.micro_batch < micro_batches && places.successor(task, micro_batches) >= 0)
      latest_s = std::max(latest_s, timings[task.id].start_s);
  return latest_s;
}

/// The steady state of `period_s` over `micro_batches`, if the longest stretch of tasks that each repeat one
/// period later holds the checked periods around a cut.
std::optional<SteadyState> steady_state_for(const Schedule& schedule, const std::vector<TaskTiming>& timings,
                                            const TaskPlaces& places, const std::vector<int>& by_start,
                                            int micro_batches, double period_s)
{
  const double tolerance_s = kSamePeriodShare * period_s;
  const auto repeats       = [&](int id) {
    const int next = places.successor(schedule.tasks[id], micro_batches);
    return next >= 0 && same_time(timings[next].start_s - timings[id].start_s, period_s, tolerance_s) &&
           same_time(timings[next].end_s - timings[id].end_s, period_s, tolerance_s);
  };
  std::size_t best_begin = 0, best_end = 0;
  for (std::size_t i = 0; i < by_start.size();) {
    if (!repeats(by_start[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < by_start.size() && repeats(by_start[j]))
      ++j;
    if (j - i > best_end - best_begin)
      best_begin = i, best_end = j;
    i = j;
  }
  if (best_end == best_begin)
    return std::nullopt;
  const double from_s = std::max(timings[by_start[best_begin]].start_s,
                                 all_kinds_started_s(schedule, timings, places, micro_batches));
  // Up to the first task that does not repeat (a task starting at the same time as it is not checked).
  const double to_s =
      best_end < by_start.size() ? timings[by_start[best_end]].start_s : timings[by_start.back()].end_s;
  // The cut: midway between the checked periods' bounds (a stretch's first periods may not yet hold every kind of
  // task, a gradient arriving only some periods into the steady state), in the gap between two start times, so
  // that no task sits on it or a period before it.
  const double target_s = (from_s + (kCheckedPeriods + 1) * period_s + to_s - kCheckedPeriods * period_s) / 2;
  // The widest gap within half a period of the target, wide enough that the tasks a period before it (in the same
  // gap, to the tolerance) fall clearly on one side.
  double cut_s = 0, widest_s = 0;
  for (std::size_t i = best_begin + 1; i < best_end; ++i) {
    const double before_s = timings[by_start[i - 1]].start_s, after_s = timings[by_start[i]].start_s;
    if (std::abs((before_s + after_s) / 2 - target_s) <= period_s / 2 && after_s - before_s > widest_s)
      widest_s = after_s - before_s, cut_s = (before_s + after_s) / 2;
  }
  if (widest_s <= 4 * tolerance_s || cut_s - (kCheckedPeriods + 1) * period_s < from_s ||
      cut_s + kCheckedPeriods * period_s > to_s)
    return std::nullopt;
  return SteadyState{cut_s, period_s, micro_batches};
}

} // namespace

int steady_state_micro_batches(const strategies::Plan& plan)
{
  const bool one_f_one_b = plan.schedule == strategies::PipelineSchedule::one_f_one_b || plan.pp == 1;
  if (!one_f_one_b || plan.virtual_stages > 1 || plan.grad_accum.empty())
    return 0;
  const auto all_equal = [](const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); };
  if (!all_equal(plan.grad_accum) || !all_equal(plan.micro_batch) || !all_equal(plan.last_micro_batch))
    return 0;
  const int micro_batches = plan.grad_accum.front();
  // The fill and drain; periods of the longest span checked either side of the cut, the repeated one and a spare
  // (the cut sits midway in what repeats); and some to settle.
  const int least = plan.pp + kMaxPeriodMicroBatches * (2 * kCheckedPeriods + 2) + kSettlingMicroBatches;
  const int replayed      = least + (micro_batches - least) % kRepeatedMultiple;
  return micro_batches - least >= 0 && micro_batches >= 2 * replayed ? replayed : 0;
}

strategies::Plan with_micro_batches(const strategies::Plan& plan, int micro_batches)
{
  strategies::Plan shorter = plan;
  std::fill(shorter.grad_accum.begin(), shorter.grad_accum.end(), micro_batches);
  return shorter;
}

std::optional<SteadyState> find_steady_state(const Schedule& replayed, const std::vector<TaskTiming>& timings)
{
  const TaskPlaces places(replayed);
  std::vector<int> by_start(replayed.tasks.size());
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int a, int b) { return timings[a].start_s < timings[b].start_s; });
  for (const auto& [micro_batches, period_s] : candidate_periods(replayed, timings, places))
    if (auto steady = steady_state_for(replayed, timings, places, by_start, micro_batches, period_s))
      return steady;
  return std::nullopt;
}

RepeatedWindow repeated_window(const SteadyState& steady, int repeats)
{
  return RepeatedWindow{steady.cut_s - steady.period_s, steady.cut_s, repeats / steady.micro_batches};
}

namespace {

/// Whether two tasks do the same work in the same place of their schedules, micro-batch aside.
bool same_work(const Task& a, const Task& b)
{
  return a.kind == b.kind && a.stream == b.stream && a.device == b.device && a.stage == b.stage &&
         a.chunk == b.chunk && a.piece == b.piece && a.part == b.part && a.peer == b.peer && a.bytes == b.bytes &&
         a.flops == b.flops && a.deps.size() == b.deps.size() && a.backward == b.backward;
}

/// Whether `timings` keep `schedule`'s order, to `tolerance_s`: every task starts once its dependencies have
/// ended and, on a stream that runs its queue in order, once the task before it has.
bool keeps_order(const Schedule& schedule, const std::vector<TaskTiming>& timings, double tolerance_s)
{
  for (const Task& task : schedule.tasks)
    for (int dep : task.deps)
      if (timings[task.id].start_s < timings[dep].end_s - tolerance_s)
        return false;
  for (const auto& streams : schedule.queues)
    for (int s = 0; s < strategies::kStreamCount; ++s)
      if (static_cast<strategies::Stream>(s) != strategies::Stream::pipeline)
        for (std::size_t i = 1; i < streams[s].size(); ++i)
          if (timings[streams[s][i]].start_s < timings[streams[s][i - 1]].end_s - tolerance_s)
            return false;
  return true;
}

/// Where each task of the full schedule comes from in the replayed one: the same task before the cut, the task
/// `repeats` micro-batches earlier after it, or a task of the repeated period, copied.
class RepeatMap {
public:
  RepeatMap(const Schedule& replayed, const std::vector<TaskTiming>& timings, const SteadyState& steady,
            int repeats)
      : replayed_(replayed), timings_(timings), steady_(steady), repeats_(repeats), places_(replayed)
  {
    for (const Task& task : replayed.tasks)
      if (task.micro_batch >= 0 && timings[task.id].start_s >= steady.cut_s - steady.period_s &&
          before_cut(task.id))
        complete_ &= repeated_.emplace(key(task, places_.place(task.id)), task.id).second;
  }

  /// Each (device, stream, place, micro-batch modulo the span) once in the repeated period.
  bool complete() const { return complete_; }

  /// The replayed task standing for `task` (at `place` among its micro-batch's) and how much later it runs;
  /// nullopt unless exactly one does.
  std::optional<std::pair<int, double>> source(const Task& task, int place) const
  {
    const int span = steady_.micro_batches, stream = static_cast<int>(task.stream);
    std::optional<std::pair<int, double>> found;
    int count = 0;
    const auto take = [&](int id, double shift_s) { found.emplace(id, shift_s), ++count; };
    const int same = places_.find(task.device, stream, task.micro_batch, place);
    if (same >= 0 && before_cut(same))
      take(same, 0);
    const bool tied = task.micro_batch >= 0;
    const int later = tied ? places_.find(task.device, stream, task.micro_batch - repeats_, place) : same;
    if (later >= 0 && (!tied || task.micro_batch >= repeats_) && !before_cut(later))
      take(later, repeats_ / span * steady_.period_s);
    if (tied)
      if (const auto it = repeated_.find(key(task, place)); it != repeated_.end()) {
        const int copy = task.micro_batch - replayed_.tasks[it->second].micro_batch; // a multiple of the span
        if (copy >= span && copy <= repeats_)
          take(it->second, copy / span * steady_.period_s);
      }
    return count == 1 ? found : std::nullopt;
  }

private:
  bool before_cut(int id) const { return timings_[id].start_s < steady_.cut_s; }
  /// Device and stream (at most 2^31 / span queues), micro-batch modulo the span, and place (below 2^32).
  long long key(const Task& task, int place) const
  {
    const long long queue =
        static_cast<long long>(task.device) * strategies::kStreamCount + static_cast<int>(task.stream);
    return (queue * steady_.micro_batches + task.micro_batch % steady_.micro_batches) << 32 | place;
  }

  const Schedule& replayed_;
  const std::vector<TaskTiming>& timings_;
  SteadyState steady_;
  int repeats_;
  TaskPlaces places_;
  std::unordered_map<long long, int> repeated_;
  bool complete_ = true;
};

} // namespace

std::optional<std::vector<TaskTiming>> repeat_steady_state(const Schedule& replayed,
                                                           const std::vector<TaskTiming>& timings,
                                                           const SteadyState& steady, int repeats,
                                                           const Schedule& full)
{
  if (replayed.queues.size() != full.queues.size() || repeats < 1 || repeats % steady.micro_batches != 0)
    return std::nullopt;
  const RepeatMap map(replayed, timings, steady, repeats);
  if (!map.complete())
    return std::nullopt;
  const std::vector<int> places = places_of(full);
  std::vector<TaskTiming> result(full.tasks.size());
  std::vector<char> used(replayed.tasks.size(), 0);
  for (const Task& task : full.tasks) {
    const auto source = map.source(task, places[task.id]);
    if (!source || !same_work(replayed.tasks[source->first], task))
      return std::nullopt;
    const auto& [id, shift_s] = *source;
    used[id]                  = 1;
    result[task.id]           = TaskTiming{timings[id].start_s + shift_s, timings[id].end_s + shift_s};
  }
  // Every replayed task stands for one, and the result runs the full schedule in its order.
  const double tolerance_s = kSamePeriodShare * steady.period_s * (1 + repeats / steady.micro_batches);
  if (std::find(used.begin(), used.end(), 0) != used.end() || !keeps_order(full, result, tolerance_s))
    return std::nullopt;
  return result;
}

} // namespace hetsim::sim
