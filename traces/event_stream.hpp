#pragma once
/// A Chrome-trace JSON file read one event at a time: `{"traceEvents": [...], ...}` (or a bare array of events,
/// which the format also allows), plain or gzipped. Events are independent, so a reader keeps what it takes of
/// each and never the whole document: memory follows what is kept, not the file's size.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace hetsim::traces {

/// The bound on a trace's bytes as read (inflated): HetSim's own traces of thousands of devices and PyTorch
/// profiler traces of large steps run to gigabytes.
constexpr std::size_t kMaxTraceBytes = std::size_t{8} << 30;
/// The bound on one JSON value of a trace (an event, or a member beside traceEvents such as deviceProperties):
/// the largest events (operators with many inputs) are kilobytes.
constexpr std::size_t kMaxTraceValueBytes = std::size_t{64} << 20;
/// The bound on what a reader keeps of a trace's events in memory: with the simulation that follows, it stays
/// inside the 4 GiB HetSim promises to live in. A PyTorch profiler trace of several steps of a large model keeps
/// about a hundred megabytes.
constexpr std::size_t kMaxKeptTraceBytes = std::size_t{512} << 20;

/// Members of the top-level object other than traceEvents, as they are (deviceProperties, otherData, ...).
using TraceMembers = nlohmann::json;

/// Reads `file`, calling `on_event(event, index)` for each element of traceEvents in order, and returns the
/// other top-level members. An InputError names the file (and the event) on a syntax error, a document that is
/// not a trace, or a value past kMaxTraceValueBytes.
TraceMembers read_trace_events(const std::string& file,
                               const std::function<void(const nlohmann::json& event, std::size_t index)>& on_event);

/// The first `bytes` of `file`, inflated when gzipped: enough to tell one kind of trace from another. A pipe is
/// refused (the trace would then be read from where this left it).
std::string trace_start(const std::string& file, std::size_t bytes);

/// Counts what a reader keeps of a trace, and refuses the trace in one line past kMaxKeptTraceBytes.
class KeptBytes {
public:
  explicit KeptBytes(std::string file) : file_(std::move(file)) {}
  void add(std::size_t bytes);

private:
  std::string file_;
  std::size_t kept_ = 0;
};

} // namespace hetsim::traces
