#pragma once
/// One simulated training iteration: replays a plan's Schedule on the SimGrid platform of its cluster and reports.
///
/// Each call runs SimGrid in a forked child process (see isolate.hpp: SimGrid cannot run two simulations in one
/// process), so simulate() may be called any number of times, and never pollutes the caller's output. Same inputs
/// give byte-identical report JSON and trace.

#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "sim/platform/slowdowns.hpp"
#include "sim/replay/replay.hpp"
#include "sim/report/report.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"
#include "traces/trace.hpp"

#include <functional>
#include <optional>

namespace hetsim::sim {

struct SimOptions {
  /// Collectives whose members all sit on one node take costmodel::collective_seconds as one wait instead of
  /// flows (a shortcut for large runs; intra-node links then see no contention from them).
  bool analytic_intra_node = false;
  /// Ring collectives move each phase as one pipelined flow per member (NCCL-like, 2(n-1) times fewer
  /// transfers) instead of step by step.
  bool pipelined_rings = false;
  /// Replaces the cost model's default compute efficiencies; must outlive the call.
  const costmodel::Calibration* calibration = nullptr;
  /// Measured per-layer times that replace the compute model where they apply; must outlive the call.
  const costmodel::LayerProfile* profile = nullptr;
  /// Build SimResult::trace. Naming millions of tasks costs seconds, so callers that write no trace skip it.
  bool trace = true;
  /// Fill Report::links with the links' bytes and busy time (some cost per transfer).
  bool links = false;
  /// When not empty (ascending), the trace keeps these devices only; a folded replay then copies events to
  /// those devices only.
  std::vector<int> trace_devices;
  /// True replays every micro-batch of the schedule simulate() is given; false (the default) replays a 1F1B
  /// pipeline's steady state once and repeats it where the plan has enough micro-batches (steady_state.hpp).
  /// sim::rescore, which lowers the plans it simulates, also replays every device (strategies::lower_for_replay).
  bool exact = false;
  /// Devices and links slowed for a while (slowdowns.hpp); the schedule must be lowered without folding.
  const std::vector<Slowdown>* slowdowns = nullptr;
  /// Replay progress (ReplayOptions::progress); runs in the simulation process.
  std::function<void(long long done, long long total)> progress;
};

/// Micro-batch folding's outcome (steady_state.hpp): `replayed` of each replica's `micro_batches` were replayed,
/// and the steady state repeats every `period_s`; 0 when none was found and the plan was replayed whole.
struct RepeatedMicroBatches {
  int replayed      = 0;
  int micro_batches = 0;
  double period_s   = 0;
};

struct SimResult {
  Report report;
  traces::Trace trace; ///< one event per task; empty when SimOptions::trace is off
  /// Set when the replay tried micro-batch folding.
  std::optional<RepeatedMicroBatches> repeated;
};

/// The options simulate() replays `schedule` with: compute durations from the cost model (or the profile), the
/// collectives priced analytically and each call's software cost. Callbacks refer to `plan`, `problem` and
/// `schedule`, which must outlive them; link usage is left unset.
ReplayOptions replay_options_for(const strategies::Plan& plan, const strategies::Problem& problem,
                                 const strategies::Schedule& schedule, const SimOptions& options);

/// Throws InternalError for a malformed schedule or a deadlock, and rethrows errors of the simulation process.
SimResult simulate(const strategies::Plan& plan, const strategies::Problem& problem,
                   const strategies::Schedule& schedule, const SimOptions& options = {});

} // namespace hetsim::sim
