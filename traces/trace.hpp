#pragma once
/// Timed tasks of one training iteration, from a simulated replay or a measured run, in one format.
/// Written as Chrome trace-event JSON (open in Perfetto or chrome://tracing): one process per device,
/// one thread per stream, every event carrying the Schedule task id, kind, bytes and FLOPs.

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace hetsim::traces {

struct TraceEvent {
  int task_id = 0;
  std::string name;  ///< e.g. "fwd s1 r0 t0 mb3"
  std::string kind;  ///< "forward", "all_reduce", ...
  std::string stream; ///< "compute", "tensor_parallel", "data_parallel", "pipeline"
  int device     = 0;
  double start_s = 0;
  double end_s   = 0;
  double bytes   = 0;
  double flops   = 0;
};

struct Trace {
  std::string source; ///< "simulation" or the executor's name
  std::vector<std::string> device_labels; ///< per device, e.g. "dev3 V100-SXM2-16GB @ Oregon.3"
  std::vector<TraceEvent> events;         ///< sorted by (device, start, task id) when written
};

void write_chrome_trace(const Trace& trace, std::ostream& out);
/// Writes to `file` (an error when it cannot be written).
void write_chrome_trace(const Trace& trace, const std::string& file);
Trace read_chrome_trace(const std::string& file);

} // namespace hetsim::traces
