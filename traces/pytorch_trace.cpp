#include "traces/pytorch_trace.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

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

nlohmann::json parse_trace_json(const std::string& file)
{
  try {
    return nlohmann::json::parse(read_maybe_gzipped(file));
  } catch (const nlohmann::json::exception& e) { // a syntax error, or a number beyond a double (1e999)
    throw InputError(file + ": not a JSON trace (" + std::string(e.what()) + ")");
  }
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

namespace {

/// At most `limit` bytes from the start of `file`, inflated when gzipped (zlib reads both).
std::string read_start(const std::string& file, std::size_t limit)
{
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(file.c_str(), "rb"), gzclose);
  if (!in)
    throw InputError(file + ": cannot open");
  std::string text;
  char buffer[1 << 16];
  int got = 0;
  while (text.size() < limit && (got = gzread(in.get(), buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(got));
  if (got < 0)
    throw InputError(file + ": cannot read (a truncated or corrupt gzip file)");
  return text;
}

} // namespace

std::string read_maybe_gzipped(const std::string& file)
{
  std::string text = read_start(file, kMaxTraceFileBytes + 1);
  if (text.size() > kMaxTraceFileBytes)
    throw InputError(file + ": expected a trace of at most " + std::to_string(kMaxTraceFileBytes >> 20) +
                     " MiB inflated, got more");
  return text;
}

bool is_pytorch_trace(const std::string& file)
{
  // The profiler's traces begin with its schema version and device properties, and record aten operators
  // ("cpu_op") from their first events on, which HetSim's own traces never write: the first MiB tells, without
  // inflating a trace of hundreds of MB that is read whole next.
  const std::string start = read_start(file, 1 << 20);
  const auto head         = start.substr(0, 4096);
  if (contains(head, "\"schemaVersion\"") || contains(head, "\"deviceProperties\""))
    return true;
  return contains(start, "\"cat\": \"cpu_op\"") || contains(start, "\"cat\":\"cpu_op\"");
}

namespace {

PytorchTrace read_events(const std::string& file, const nlohmann::json& root)
{
  PytorchTrace trace;
  trace.file = file;
  if (auto props = root.find("deviceProperties"); props != root.end() && props->is_array() && !props->empty())
    trace.device_name = (*props)[0].value("name", "");

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
  for (const auto& event : root.at("traceEvents")) {
    if (!event.is_object() || event.value("ph", "") != "X" || !event.contains("ts"))
      continue;
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
      if (id >= 0)
        ops[id] = std::move(op);
    } else if (category == "user_annotation" && event.value("name", "").rfind("ProfilerStep#", 0) == 0) {
      steps.push_back({event.value("name", ""), ts, dur, 0, 0});
    } else if (is_gpu_activity(category)) {
      activities.push_back({event.value("name", category), ts, dur, id});
    }
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
  const nlohmann::json root = parse_trace_json(file);
  if (!root.is_object() || !root.contains("traceEvents") || !root.at("traceEvents").is_array())
    throw InputError(file + ": traceEvents: expected the array of events torch.profiler's export_chrome_trace writes");
  try {
    return read_events(file, root);
  } catch (const nlohmann::json::exception& e) { // a field of the wrong type in some event
    throw InputError(file + ": traceEvents: expected events as torch.profiler writes them (" + std::string(e.what()) +
                     ")");
  }
}

} // namespace hetsim::traces
