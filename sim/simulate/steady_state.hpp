#pragma once
/// Micro-batch folding: a pipeline's steady state replayed once and repeated.
///
/// With many more micro-batches than stages, a 1F1B pipeline spends most of its iteration in a steady state in
/// which every device does the same work one period later for the next micro-batch. The replay is
/// deterministic: once it is in the state it was in one period earlier, up to the micro-batch numbers, it
/// repeats that period for as long as the schedule does. So a plan of m micro-batches per replica is replayed
/// with m' of them, enough to reach its steady state and check it. A period spans q micro-batches (1 to 4), and
/// the iteration's timings are that replay's with (m - m') / q periods put in at a cut inside the steady state: a
/// task that starts before the cut keeps its time and micro-batch, one that starts after it moves (m - m') / q
/// periods later (and its micro-batch m - m' higher), and each task of the period before the cut stands for its
/// (m - m') / q copies one period apart. Links count that period's bytes and busy time as many more times.
///
/// The steady state is checked, not assumed: every task that starts within kCheckedPeriods periods either side
/// of the cut must start and end exactly one period after the same task (device, stream, place among its
/// micro-batch's tasks there) of the micro-batches one period before; the tasks so placed must be the full
/// schedule's, each once and doing the same work; and their timings must keep the full schedule's order (every
/// task after its dependencies and its stream's task before it). Otherwise simulate() replays the plan whole.
/// `--exact` replays every micro-batch. The full schedule must be the lowering of the plan simulate() is given
/// (the shortened plan is lowered from it), which is why validate and calibrate, whose schedules are the runs'
/// own, replay every micro-batch.

#include "sim/replay/replay.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"

#include <optional>
#include <vector>

namespace hetsim::sim {

/// Periods checked before and after the cut (and the period before it, which is repeated).
inline constexpr int kCheckedPeriods = 2;

/// Most micro-batches a steady state's period may span. A pipeline whose transfers share links with another
/// replica's can settle into a period of two micro-batches (every other transfer meets the other's); the
/// micro-batches repeated are a multiple of every span up to this (kRepeatedMultiple).
inline constexpr int kMaxPeriodMicroBatches = 4;
inline constexpr int kRepeatedMultiple      = 12; ///< lcm(1, ..., kMaxPeriodMicroBatches)

/// Where a replay repeats: around `cut_s`, every task starts and ends `period_s` after the same task
/// `micro_batches` micro-batches earlier.
struct SteadyState {
  double cut_s      = 0;
  double period_s   = 0;
  int micro_batches = 1;
};

/// Micro-batches per replica to replay `plan` with so that its steady state shows and can be checked: the
/// pipeline's fill and drain, the checked periods and some to settle, and as many more as leave a multiple of
/// kRepeatedMultiple to repeat. 0 when the plan does not fold so: schedules other than 1F1B without virtual stages
/// (or a single stage), replicas of different micro-batches, or too few micro-batches for the fold to save half
/// the replay.
int steady_state_micro_batches(const strategies::Plan& plan);

/// `plan` with `micro_batches` micro-batches per replica (each replica's size and last batch unchanged).
strategies::Plan with_micro_batches(const strategies::Plan& plan, int micro_batches);

/// The steady state of a replay of `replayed`, or nullopt when none is long enough to check.
std::optional<SteadyState> find_steady_state(const strategies::Schedule& replayed,
                                             const std::vector<TaskTiming>& timings);

/// The stretch of the replay that the iteration runs again for `repeats` more micro-batches (a multiple of
/// steady.micro_batches): the period before the cut.
RepeatedWindow repeated_window(const SteadyState& steady, int repeats);

/// The timings of `full`, the plan of `replayed` with `repeats` more micro-batches per replica (a multiple of
/// steady.micro_batches), from the replay of `replayed`; nullopt when its tasks do not line up with `full`'s as a
/// repetition of the steady state.
std::optional<std::vector<TaskTiming>> repeat_steady_state(const strategies::Schedule& replayed,
                                                           const std::vector<TaskTiming>& timings,
                                                           const SteadyState& steady, int repeats,
                                                           const strategies::Schedule& full);

} // namespace hetsim::sim
