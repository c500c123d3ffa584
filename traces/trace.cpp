#include "traces/trace.hpp"

#include "core/units.hpp"

#include "core/cluster.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/output_file.hpp"
#include "traces/event_stream.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <sstream>
#include <map>
#include <string_view>
#include <tuple>

namespace hetsim::traces {
namespace {

// Thread ids of the streams inside each device's track, in display order.
constexpr std::array<std::string_view, 6> kStreams = {"compute",         "tensor_parallel",  "data_parallel",
                                                      "expert_parallel", "context_parallel", "pipeline"};

int stream_tid(const std::string& stream)
{
  for (std::size_t i = 0; i < kStreams.size(); ++i)
    if (kStreams[i] == stream)
      return static_cast<int>(i);
  return static_cast<int>(kStreams.size());
}

constexpr double kMicrosecondsPerSecond = 1e6;
/// Thread ids of a stream's lanes: stream * kLanesPerStream + lane.
constexpr int kLanesPerStream = 1000;
/// The thread of a device's kernels, after its streams' lanes.
constexpr int kKernelThread = static_cast<int>(kStreams.size() + 1) * kLanesPerStream;

/// A device id (`pid`) of `entry`, bounded like a cluster's so that a stray value cannot size the labels.
int device_of(const JsonInput& entry)
{
  const JsonInput pid = entry.at("pid");
  const int device    = pid.non_negative_int();
  if (device >= Cluster::kMaxDevices)
    pid.fail("a device id below " + std::to_string(Cluster::kMaxDevices));
  return device;
}

} // namespace

std::vector<int> parse_device_list(const std::string& list, int device_count, const std::string& option)
{
  std::vector<int> devices;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t comma = std::min(list.find(',', begin), list.size());
    const std::string part  = list.substr(begin, comma - begin);
    const auto fail = [&] {
      throw InputError(option + ": expected device ids or ranges such as 0,4-7, each below " +
                       std::to_string(device_count) + ", got " + quote(part));
    };
    // "N" or "N-M", decimal digits only (from_chars refuses what does not fit an int).
    const auto number = [&](const char* from, const char* to, int& value) {
      const auto [end, error] = std::from_chars(from, to, value);
      return error == std::errc() && end == to && from != to && std::isdigit(static_cast<unsigned char>(*from));
    };
    const std::size_t dash = part.find('-');
    const char* text       = part.data();
    int first = 0, last = 0;
    const bool ok = dash == std::string::npos
                        ? number(text, text + part.size(), first) && (last = first, true)
                        : number(text, text + dash, first) && number(text + dash + 1, text + part.size(), last);
    if (!ok)
      fail();
    if (first < 0 || last < first || last >= device_count)
      fail();
    for (int d = first; d <= last; ++d)
      devices.push_back(d);
    begin = comma + 1;
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

void keep_devices(Trace& trace, const std::vector<int>& devices)
{
  const auto kept = [&](int device) { return std::binary_search(devices.begin(), devices.end(), device); };
  std::erase_if(trace.events, [&](const TraceEvent& e) { return !kept(e.device); });
  std::erase_if(trace.kernels, [&](const KernelEvent& k) { return !kept(k.device); });
  std::erase_if(trace.memory, [&](const MemorySample& m) { return !kept(m.device); });
}

void write_chrome_trace(const Trace& trace, std::ostream& out)
{
  std::vector<const TraceEvent*> events;
  events.reserve(trace.events.size());
  for (const auto& e : trace.events)
    events.push_back(&e);
  std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return std::tie(a->device, a->start_s, a->task_id) < std::tie(b->device, b->start_s, b->task_id);
  });

  nlohmann::json list = nlohmann::json::array();
  for (std::size_t d = 0; d < trace.device_labels.size(); ++d) {
    list.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"args", {{"name", trace.device_labels[d]}}}});
    list.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", d}, {"args", {{"sort_index", d}}}});
  }
  // Trace viewers need the slices of one thread to nest, but pipeline transfers overlap: each event goes to the
  // first lane of its stream that is free by its start, and every lane is a thread of its own.
  std::map<std::pair<int, int>, std::vector<double>> lane_ends; // (device, stream) -> end of each lane's last event
  std::map<int, std::pair<const TraceEvent*, int>> p2p;           // send/recv task id -> its event and thread
  for (const TraceEvent* e : events) {
    const int stream = stream_tid(e->stream);
    auto& ends       = lane_ends[{e->device, stream}];
    std::size_t lane = 0;
    while (lane < ends.size() && ends[lane] > e->start_s)
      ++lane;
    if (lane == ends.size()) {
      ends.push_back(e->end_s);
      const std::string thread = lane == 0 ? e->stream : e->stream + " " + std::to_string(lane + 1);
      list.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", e->device}, {"tid", stream * kLanesPerStream + lane},
                      {"args", {{"name", thread}}}});
    }
    ends[lane] = e->end_s;
    nlohmann::json args = {{"task_id", e->task_id}, {"kind", e->kind},   {"stream", e->stream}, {"bytes", e->bytes},
                           {"flops", e->flops},     {"start_s", e->start_s}, {"end_s", e->end_s}};
    if (e->tokens > 0)
      args["tokens"] = e->tokens;
    if (!e->link.empty())
      args["link"] = e->link;
    if (e->members > 0)
      args["members"] = e->members;
    if (e->collective >= 0)
      args["collective"] = e->collective;
    if (e->match >= 0) {
      args["match"] = e->match;
      p2p[e->task_id] = {e, stream * kLanesPerStream + static_cast<int>(lane)};
    }
    list.push_back({{"name", e->name},
                    {"cat", e->kind},
                    {"ph", "X"},
                    {"pid", e->device},
                    {"tid", stream * kLanesPerStream + lane},
                    {"ts", e->start_s * kMicrosecondsPerSecond},
                    {"dur", (e->end_s - e->start_s) * kMicrosecondsPerSecond},
                    {"args", std::move(args)}});
  }
  // An arrow from each send to its recv (Perfetto's flow events: "s" binds to the slice around its time on the
  // sending thread, "f" with binding point "e" to the slice around its time on the receiving one; midpoints, so
  // that a slice that starts where another ends is never taken for it).
  for (const auto& [id, sent] : p2p) {
    const auto received = p2p.find(sent.first->match);
    if (sent.first->kind != "send" || received == p2p.end())
      continue;
    const TraceEvent& recv = *received->second.first;
    list.push_back({{"name", "transfer"}, {"cat", "transfer"}, {"ph", "s"}, {"id", id},
                    {"pid", sent.first->device}, {"tid", sent.second},
                    {"ts", (sent.first->start_s + sent.first->end_s) / 2 * kMicrosecondsPerSecond}});
    list.push_back({{"name", "transfer"}, {"cat", "transfer"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                    {"pid", recv.device}, {"tid", received->second.second},
                    {"ts", (recv.start_s + recv.end_s) / 2 * kMicrosecondsPerSecond}});
  }
  std::vector<bool> has_kernel_thread(trace.device_labels.size());
  for (const KernelEvent& k : trace.kernels) {
    if (k.device >= 0 && static_cast<std::size_t>(k.device) < has_kernel_thread.size() &&
        !has_kernel_thread[k.device]) {
      has_kernel_thread[k.device] = true;
      list.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", k.device}, {"tid", kKernelThread},
                      {"args", {{"name", "kernels"}}}});
    }
    list.push_back({{"name", k.name},
                    {"cat", "kernel"},
                    {"ph", "X"},
                    {"pid", k.device},
                    {"tid", kKernelThread},
                    {"ts", k.start_s * kMicrosecondsPerSecond},
                    {"dur", (k.end_s - k.start_s) * kMicrosecondsPerSecond},
                    {"args", {{"task_id", k.task_id}, {"kernel", k.name}, {"start_s", k.start_s}, {"end_s", k.end_s}}}});
  }
  for (const MemorySample& m : trace.memory)
    list.push_back({{"name", "memory"},
                    {"ph", "C"},
                    {"pid", m.device},
                    {"ts", m.time_s * kMicrosecondsPerSecond},
                    {"args", {{"GiB", m.bytes / units::kGiB}}}});
  // One compact event per line: a million-task trace stays a few hundred bytes per event and greppable.
  nlohmann::json other = {{"source", trace.source}};
  if (trace.scale != 1)
    other["scale"] = trace.scale;
  for (const auto& d : trace.devices)
    other["devices"].push_back({{"gpu", d.gpu}, {"peak_flops", d.peak_flops}});
  out << "{\"displayTimeUnit\": \"ms\", \"otherData\": " << other.dump() << ", \"traceEvents\": [\n";
  for (std::size_t i = 0; i < list.size(); ++i)
    out << list[i].dump() << (i + 1 < list.size() ? ",\n" : "\n");
  out << "]}\n";
}

void write_chrome_trace(const Trace& trace, const std::string& file)
{
  std::ostringstream out;
  write_chrome_trace(trace, out);
  write_file_atomically(file, out.str());
}

namespace {

/// One event of a HetSim trace into `trace` (metadata, memory counters, kernels and tasks alike).
void read_event(const JsonInput& entry, Trace& trace, KeptBytes& kept)
{
  const std::string phase = entry.at("ph").string();
  if (phase == "M") {
    if (entry.at("name").string() == "process_name") {
      const int pid = device_of(entry);
      if (static_cast<int>(trace.device_labels.size()) <= pid)
        trace.device_labels.resize(pid + 1);
      trace.device_labels[pid] = entry.at("args").at("name").string();
      kept.add(sizeof(std::string) + trace.device_labels[pid].size());
    }
    return;
  }
  if (phase == "C" && entry.at("name").string() == "memory") {
    trace.memory.push_back(MemorySample{device_of(entry), entry.at("ts").number() / kMicrosecondsPerSecond,
                                        entry.at("args").at("GiB").non_negative_number() * units::kGiB});
    kept.add(sizeof(MemorySample));
    return;
  }
  if (phase != "X")
    return;
  JsonInput args = entry.at("args");
  if (auto kernel = args.find("kernel")) {
    KernelEvent k;
    k.task_id = args.at("task_id").non_negative_int();
    k.device  = device_of(entry);
    k.name    = kernel->string();
    k.start_s = args.at("start_s").number();
    k.end_s   = args.at("end_s").number();
    kept.add(sizeof(KernelEvent) + k.name.size());
    trace.kernels.push_back(std::move(k));
    return;
  }
  TraceEvent e;
  e.task_id = args.at("task_id").non_negative_int(); // a Schedule task's index (5e9 read as 705,032,704 before)
  e.name    = entry.at("name").string();
  e.kind    = args.at("kind").string();
  e.stream  = args.string_or("stream", "compute");
  e.device  = device_of(entry);
  // Exact seconds when present; the microsecond fields are what other tools write.
  e.start_s = args.number_or("start_s", entry.at("ts").number() / kMicrosecondsPerSecond);
  e.end_s   = args.number_or("end_s", e.start_s + entry.at("dur").non_negative_number() / kMicrosecondsPerSecond);
  e.bytes   = args.non_negative_number_or("bytes", 0);
  e.flops   = args.non_negative_number_or("flops", 0);
  e.tokens  = args.non_negative_number_or("tokens", 0);
  e.link    = args.string_or("link", "");
  e.members = static_cast<int>(args.non_negative_number_or("members", 0));
  if (auto collective = args.find("collective"))
    e.collective = collective->non_negative_int();
  if (auto match = args.find("match"))
    e.match = match->non_negative_int();
  kept.add(sizeof(TraceEvent) + e.name.size() + e.kind.size() + e.stream.size() + e.link.size());
  trace.events.push_back(std::move(e));
}

} // namespace

Trace read_chrome_trace(const std::string& file)
{
  Trace trace;
  KeptBytes kept(file);
  const TraceMembers members = read_trace_events(file, [&](const nlohmann::json& event, std::size_t index) {
    read_event(JsonInput(event, file, "traceEvents[" + std::to_string(index) + "]"), trace, kept);
  });
  const JsonInput root(members, file);
  if (auto other = root.find("otherData")) {
    trace.source = other->string_or("source", "");
    trace.scale  = other->positive_number_or("scale", 1);
    if (auto devices = other->find("devices"))
      for (const auto& d : devices->elements())
        trace.devices.push_back(TraceDevice{d.at("gpu").string(), d.at("peak_flops").positive_number()});
  }
  return trace;
}

} // namespace hetsim::traces
