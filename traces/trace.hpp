#pragma once
/// Timed tasks of one training iteration, from a simulated replay or a measured run, in one format.
/// Written as Chrome trace-event JSON (open in Perfetto or chrome://tracing): one process per device,
/// one thread per stream, every event carrying the Schedule task id, kind, bytes and FLOPs, and a flow arrow
/// from each send to its matching recv.

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace hetsim::traces {

struct TraceEvent {
  int task_id = 0;
  std::string name;  ///< e.g. "fwd s1 r0 t0 mb3"
  std::string kind;  ///< "forward", "all_reduce", ...
  std::string stream; ///< "compute", "tensor_parallel", "data_parallel", "expert_parallel", "context_parallel", "pipeline"
  int device     = 0;
  double start_s = 0;
  double end_s   = 0;
  double bytes   = 0;
  double flops   = 0;
  // What calibration needs beyond the timing (measured traces fill them; 0 or empty when unknown).
  double tokens  = 0;  ///< compute tasks: tokens of the micro-batch (efficiency depends on them)
  std::string link;    ///< communication: the slowest link class crossed ("intra_node", "inter_node", ...)
  int members    = 0;  ///< collectives: group size
  int collective = -1; ///< collectives: index in the Schedule, shared by the members' events
  int match      = -1; ///< send/recv: the task id of the matching recv/send (the trace draws an arrow between)
};

/// One kernel of a compute task, written only when asked for (`--trace-kernels`): the operator-by-operator view
/// of a task's time. Kernels of one task run one after another inside its interval.
struct KernelEvent {
  int task_id = 0;  ///< the compute task that launched it
  int device  = 0;
  std::string name; ///< models::Kernel::name, e.g. "attention.qkv" or "mlp.down.dgrad"
  double start_s = 0;
  double end_s   = 0;
};

/// The hardware behind one device of a trace, for fitting compute efficiency.
struct TraceDevice {
  std::string gpu;
  double peak_flops = 0; ///< for the run's dtype
};

/// One point of a device's memory counter track: from `time_s` on, the device holds `bytes` (written as a Chrome
/// counter event, "ph": "C", drawn by Perfetto as a step chart under the device).
struct MemorySample {
  int device    = 0;
  double time_s = 0;
  double bytes  = 0;
};

struct Trace {
  std::string source; ///< "simulation" or the executor's name
  std::vector<std::string> device_labels; ///< per device, e.g. "dev3 V100-SXM2-16GB @ Oregon.3"
  std::vector<TraceEvent> events;         ///< sorted by (device, start, task id) when written
  std::vector<TraceDevice> devices;       ///< per device when known (measured traces), else empty
  std::vector<KernelEvent> kernels;       ///< per kernel of each compute task when traced, else empty
  std::vector<MemorySample> memory;       ///< per device, in time order, when known (simulations), else empty
  /// The model's hidden sizes were multiplied by this in the run that measured the trace (`hetsim run --scale`;
  /// strategies/lowering/scale.hpp); written only when not 1.
  double scale = 1;
};

/// Device ids from a list such as "0,3,8-15" (`--trace-devices`), each below `device_count`; throws InputError
/// naming `option` and the part it cannot read.
std::vector<int> parse_device_list(const std::string& list, int device_count, const std::string& option);
/// Keeps the events, kernels and memory samples of `devices` only (a trace of thousands of devices stays small); the device
/// labels stay, so that every device keeps its id.
void keep_devices(Trace& trace, const std::vector<int>& devices);

void write_chrome_trace(const Trace& trace, std::ostream& out);
/// Writes to `file` (an error when it cannot be written).
void write_chrome_trace(const Trace& trace, const std::string& file);
Trace read_chrome_trace(const std::string& file);

} // namespace hetsim::traces
