#pragma once
/// What one simulated training iteration achieved: time, throughput, MFU, and where each device spent its time.
///
/// Per device, from the replayed task intervals:
///  - compute_s: busy time on the compute stream (forward, backward, optimizer);
///  - comm_s: length of the union of its communication tasks' intervals (tensor-parallel, data-parallel and
///    pipeline streams), whether or not computation overlaps them. A send/recv spans its transfer (from the
///    moment both sides are ready); a collective member spans from its arrival to the end of its part, so the
///    time it waits inside the collective for slower members counts;
///  - exposed_comm_s: the part of comm_s during which the compute stream is idle;
///  - idle_s: iteration time minus the union of all its task intervals (compute_s + exposed_comm_s + idle_s is
///    the iteration time).
/// The bottleneck is the device whose compute holds up the critical path most (sim/critical_path.hpp): on a
/// cluster with one slow GPU, that GPU, not the devices waiting for it in their collectives. It is
/// compute-bound when the path spends at least as long in compute as in communication, communication-bound
/// otherwise.
///
/// Pipeline bubble, per device: the time its compute stream is idle inside the window of the pipelines (from the
/// first forward of any device to the last backward of any device), as a share of that window. It holds the
/// schedule's fill and drain and whatever else stalls compute inside the window (exposed tensor-parallel
/// communication, waits for a slower stage, a replica with less work). The ideal share of a GPipe or 1F1B pipeline of p stages and m micro-batches with
/// equal stages and free communication is (p - 1) / (m + p - 1).

#include "sim/replay/replay.hpp"
#include "sim/report/link_report.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"
#include "traces/trace.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace hetsim::sim {

struct DeviceReport {
  int device = 0;
  std::string gpu;
  int stage                 = -1; ///< pipeline stage the plan gives the device
  double compute_s          = 0;
  double comm_s             = 0;
  double exposed_comm_s     = 0;
  double idle_s             = 0;
  /// The peak by term (strategies::plan_memory; total_bytes() is the peak, capacity_bytes what the device has):
  /// what to shrink when it does not fit.
  strategies::DeviceMemory memory;
  double bubble_s = 0; ///< compute idle inside the pipelines' window
};

/// One pipeline stage: its devices' mean bubble and its fullest device's memory by term.
struct StageReport {
  int stage   = 0;
  int devices = 0;
  double bubble_s        = 0; ///< mean over the stage's devices
  double bubble_fraction = 0; ///< bubble_s / window
  int peak_memory_device = -1;
  strategies::DeviceMemory memory; ///< of peak_memory_device
};

struct PipelineBubble {
  double window_s       = 0; ///< from the first forward's start to the last backward's end, over all devices
  double fraction       = 0; ///< mean over the devices of bubble / window
  double ideal_fraction = 0; ///< (p - 1) / (v m + p - 1) with v chunks per device, the largest over replicas
};

struct Bottleneck {
  int device = -1;
  std::string bound;        ///< "compute" or "communication"
  double busy_fraction = 0; ///< share of the iteration the device is busy (1 - idle / time)
  double critical_compute_s = 0; ///< seconds of the device's compute on the critical path
};

struct Report {
  std::string cluster;
  std::string model;
  std::string dtype;
  long long global_batch  = 0; ///< sequences per iteration
  int seq_len             = 0;
  double iteration_time_s = 0;
  double tokens_per_s     = 0; ///< global batch * seq_len / iteration time
  double tflops_per_s     = 0; ///< model FLOPs (forward + backward, no recompute) of the global batch / time / 1e12
  double mfu              = 0; ///< model FLOP/s over the summed peak FLOP/s (for the dtype) of the used devices
  std::vector<DeviceReport> devices; ///< the devices the plan uses, by id
  std::vector<StageReport> stages;   ///< by stage
  PipelineBubble bubble;
  Bottleneck bottleneck;
  LinkSummary links; ///< from the replay (sim::simulate with SimOptions::links); empty for a measured trace
};

/// Of the iteration, the most any device spends communicating with its compute idle (0 for an empty report).
double exposed_comm_share(const Report& report);

/// Builds the report from the replayed timings (one per task, by id).
Report make_report(const strategies::Plan& plan, const strategies::Problem& problem,
                   const strategies::Schedule& schedule, const std::vector<TaskTiming>& timings);

/// The same from a trace of the schedule (measured or simulated): one event per task, matched by task id.
/// Throws InputError when a task has no event. FLOP/s and MFU count the FLOPs the run did: those of the model
/// at the trace's scale.
Report report_from_trace(const strategies::Plan& plan, const strategies::Problem& problem,
                         const strategies::Schedule& schedule, const traces::Trace& trace);

/// Deterministic JSON (keys sorted; numbers printed by nlohmann at full precision).
nlohmann::json report_to_json(const Report& report);

/// A readable aligned table. Up to kReportAllDevices devices are listed one by one; larger runs get a summary
/// per GPU type and stage plus the kReportTopDevices busiest devices.
/// `title` heads the table ("simulated iteration", "measured iteration").
void print_report(const Report& report, std::ostream& out, const std::string& title = "simulated iteration");

inline constexpr int kReportAllDevices = 32;
inline constexpr int kReportTopDevices = 8;

} // namespace hetsim::sim
