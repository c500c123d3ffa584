#include "traces/pytorch_trace.hpp"

#include "core/error.hpp"
#include "traces/event_stream.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <memory>

namespace hetsim::traces {
namespace {

bool contains(const std::string& text, const char* part)
{
  return text.find(part) != std::string::npos;
}

/// Bytes of one element of a type as the profiler names it ("c10::BFloat16", "float", "long int"); 0 for what
/// is not a tensor's element type (Scalar, TensorList, "").
double element_bytes(const std::string& type)
{
  static const std::map<std::string, double> sizes = {
      {"float", 4},         {"double", 8},       {"c10::BFloat16", 2}, {"c10::Half", 2},   {"long int", 8},
      {"int", 4},           {"short int", 2},    {"bool", 1},          {"unsigned char", 1}, {"signed char", 1},
      {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}};
  auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}

/// The kind of a kernel by its name and its operator's (see ProfiledKind).
ProfiledKind classify(const std::string& kernel, const std::string& op)
{
  if (contains(kernel, "nccl") || contains(op, "nccl") || contains(op, "c10d::"))
    return ProfiledKind::communication;
  if (contains(op, "scaled_dot_product") || contains(op, "flash_attention") || contains(op, "efficient_attention") ||
      contains(op, "cudnn_attention") || contains(kernel, "flash") || contains(kernel, "fmha") ||
      contains(kernel, "sdpa"))
    return ProfiledKind::attention;
  if (op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::baddbmm" || op == "aten::addbmm" ||
      op == "aten::_scaled_mm" || contains(kernel, "gemm") || contains(kernel, "nvjet"))
    return ProfiledKind::matmul;
  if (contains(op, "log_softmax") || contains(op, "nll_loss") || contains(op, "cross_entropy"))
    return ProfiledKind::loss;
  if (contains(kernel, "multi_tensor_apply") || contains(op, "_fused_adam") || contains(op, "_foreach_"))
    return ProfiledKind::optimizer;
  return ProfiledKind::memory;
}

/// An operator as record_shapes kept it.
struct RecordedOp {
  std::string name;
  std::vector<std::vector<double>> dims;
  std::vector<double> element_bytes;
};

RecordedOp recorded_op(const nlohmann::json& event)
{
  RecordedOp op;
  op.name           = event.value("name", "");
  const auto& args  = event.at("args");
  const auto dims   = args.find("Input Dims");
  const auto types  = args.find("Input type");
  if (dims == args.end() || !dims->is_array())
    return op;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    const auto& entry = (*dims)[i];
    std::vector<double> shape;
    bool tensor = entry.is_array();
    for (const auto& extent : entry.is_array() ? entry : nlohmann::json::array())
      if (extent.is_number())
        shape.push_back(extent.get<double>());
      else
        tensor = false; // a TensorList: a list of shapes
    const std::string type =
        types != args.end() && types->is_array() && i < types->size() && (*types)[i].is_string() ? (*types)[i].get<std::string>()
                                                                                              : "";
    op.dims.push_back(tensor ? shape : std::vector<double>{});
    op.element_bytes.push_back(tensor ? element_bytes(type) : 0);
  }
  return op;
}

/// Seconds in the union of [start, end) intervals.
double union_seconds(std::vector<std::pair<double, double>> intervals)
{
  std::sort(intervals.begin(), intervals.end());
  double total = 0, reach = -1e300;
  for (const auto& [start, end] : intervals) {
    if (end <= reach)
      continue;
    total += end - std::max(start, reach);
    reach = end;
  }
  return total;
}

bool is_gpu_activity(const std::string& category)
{
  return category == "kernel" || category == "gpu_memset" || category == "gpu_memcpy";
}

} // namespace

const char* profiled_kind_name(ProfiledKind kind)
{
  switch (kind) {
  case ProfiledKind::matmul: return "matmul";
  case ProfiledKind::attention: return "attention";
  case ProfiledKind::loss: return "loss";
  case ProfiledKind::optimizer: return "optimizer";
  case ProfiledKind::communication: return "communication";
  case ProfiledKind::memory: return "memory";
  }
  return "memory";
}

bool is_pytorch_trace(const std::string& file)
{
  // HetSim's own traces begin as traces::write_chrome_trace writes them. The profiler's begin with its schema
  // version and device properties, and record aten operators ("cpu_op") from their first events on: the first
  // MiB tells, inflated when gzipped, without reading a trace of gigabytes.
  const std::string start = trace_start(file, 1 << 20);
  if (start.starts_with("{\"displayTimeUnit\": \"ms\", \"otherData\": "))
    return false;
  if (contains(start.substr(0, 4096), "\"otherData\"") && contains(start.substr(0, 4096), "\"source\""))
    return false; // HetSim's, written over (pretty-printed, keys reordered)
  const auto head = start.substr(0, 4096);
  if (contains(head, "\"schemaVersion\"") || contains(head, "\"deviceProperties\""))
    return true;
  if (contains(start, "\"cat\": \"cpu_op\"") || contains(start, "\"cat\":\"cpu_op\""))
    return true;
  // Neither's marks in the first MiB: events that name a Schedule task are HetSim's; anything else is read as a
  // profiler trace, whose reader says what it lacks.
  return !contains(start, "\"task_id\"");
}

namespace {

/// What is kept of an event, in bytes (KeptBytes): the struct and the text it holds.
template <class Kept>
std::size_t kept_bytes(const Kept&, const std::string& text)
{
  return sizeof(Kept) + text.size();
}

PytorchTrace read_events(const std::string& file)
{
  PytorchTrace trace;
  trace.file = file;
  std::map<long long, RecordedOp> ops; // by External id
  struct Activity {
    std::string name;
    double start_us = 0, dur_us = 0;
    long long op_id = -1;
  };
  std::vector<Activity> activities;
  std::vector<ProfiledStep> steps;
  double origin_us = 1e300;
  bool shapes      = false;
  KeptBytes kept(file);
  const auto on_event = [&](const nlohmann::json& event, std::size_t index) {
    try {
      if (!event.is_object() || event.value("ph", "") != "X" || !event.contains("ts"))
        return;
      const std::string category = event.value("cat", "");
      const double ts            = event.at("ts").get<double>();
      const double dur           = event.value("dur", 0.0);
      origin_us                  = std::min(origin_us, ts);
      const auto args            = event.find("args");
      const long long id = args != event.end() && args->contains("External id") && (*args)["External id"].is_number()
                               ? (*args)["External id"].get<long long>()
                               : -1;
      if (category == "cpu_op") {
        RecordedOp op = recorded_op(event);
        shapes        = shapes || !op.dims.empty();
        if (id >= 0) {
          std::size_t dims = 0;
          for (const auto& shape : op.dims)
            dims += shape.size() + 4; // a vector's own three pointers, and its element's size
          kept.add(kept_bytes(op, op.name) + 64 + 16 * dims); // 64: the map's node; 16: its kernels keep a copy
          ops[id] = std::move(op);
        }
      } else if (category == "user_annotation" && event.value("name", "").rfind("ProfilerStep#", 0) == 0) {
        steps.push_back({event.value("name", ""), ts, dur, 0, 0});
        kept.add(kept_bytes(steps.back(), steps.back().name));
      } else if (is_gpu_activity(category)) {
        activities.push_back({event.value("name", category), ts, dur, id});
        // Twice: each becomes a ProfiledKernel too.
        kept.add(2 * kept_bytes(activities.back(), activities.back().name) + sizeof(ProfiledKernel));
      }
    } catch (const nlohmann::json::exception& e) { // a field of the wrong type in this event
      throw InputError(file + ": traceEvents[" + std::to_string(index) +
                       "]: expected events as torch.profiler writes them (" + std::string(e.what()) + ")");
    }
  };
  const TraceMembers members = read_trace_events(file, on_event);
  if (auto props = members.find("deviceProperties");
      props != members.end() && props->is_array() && !props->empty() && (*props)[0].is_object()) {
    const auto name = (*props)[0].find("name");
    trace.device_name = name != (*props)[0].end() && name->is_string() ? name->get<std::string>() : "";
  }
  if (activities.empty())
    throw InputError(file + ": traceEvents: no GPU kernels (record with activities=[ProfilerActivity.CPU, "
                            "ProfilerActivity.CUDA])");
  if (!shapes)
    throw InputError(file + ": traceEvents: operators carry no \"Input Dims\" (record with record_shapes=True)");

  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
  std::sort(activities.begin(), activities.end(), [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  if (steps.empty()) // a trace that marks no steps is one step
    steps.push_back({"trace", activities.front().start_us,
                     activities.back().start_us + activities.back().dur_us - activities.front().start_us, 0, 0});

  std::vector<std::vector<std::pair<double, double>>> busy(steps.size());
  for (const Activity& a : activities) {
    // A step's GPU work starts inside its host span (the profiler steps after a synchronisation).
    int step = -1;
    for (std::size_t s = 0; s < steps.size(); ++s)
      if (a.start_us >= steps[s].start_s && a.start_us < steps[s].start_s + steps[s].seconds)
        step = static_cast<int>(s);
    if (step < 0)
      continue; // warm-up work the profiler caught before the first step
    ProfiledKernel kernel;
    kernel.name    = a.name;
    kernel.start_s = (a.start_us - origin_us) * 1e-6;
    kernel.seconds = a.dur_us * 1e-6;
    kernel.step    = step;
    kernel.op_id   = a.op_id;
    if (auto op = ops.find(a.op_id); op != ops.end()) {
      kernel.op                  = op->second.name;
      kernel.input_dims          = op->second.dims;
      kernel.input_element_bytes = op->second.element_bytes;
    }
    kernel.kind = classify(kernel.name, kernel.op);
    busy[step].push_back({a.start_us, a.start_us + a.dur_us});
    ++steps[step].launches;
    trace.kernels.push_back(std::move(kernel));
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    steps[s].busy_s = union_seconds(busy[s]) * 1e-6;
    steps[s].start_s = (steps[s].start_s - origin_us) * 1e-6;
    steps[s].seconds *= 1e-6;
  }
  trace.steps = std::move(steps);
  return trace;
}

} // namespace

PytorchTrace read_pytorch_trace(const std::string& file)
{
  return read_events(file);
}

} // namespace hetsim::traces
