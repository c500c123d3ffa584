#include "sim/report/report.hpp"

#include "sim/report/critical_path.hpp"
#include "sim/report/report_format.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <utility>

namespace hetsim::sim {
namespace {

using Interval = std::pair<double, double>;

/// Total length of the union of intervals.
double union_length(std::vector<Interval>& intervals)
{
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  double begin = 0;
  double end   = -1;
  bool open    = false;
  for (const auto& [s, e] : intervals) {
    if (!open || s > end) {
      if (open)
        total += end - begin;
      begin = s, end = e, open = true;
    } else {
      end = std::max(end, e);
    }
  }
  if (open)
    total += end - begin;
  return total;
}

std::string stage_text(int stage)
{
  return stage < 0 ? "-" : std::to_string(stage);
}

/// Report::stages and Report::bubble from the devices' figures.
void summarize_stages(const strategies::Plan& plan, Report& report)
{
  std::map<int, StageReport> stages;
  const double window_s = report.bubble.window_s;
  double fractions      = 0;
  for (const auto& d : report.devices) {
    const double fraction = window_s > 0 ? d.bubble_s / window_s : 0;
    fractions += fraction;
    if (d.stage < 0)
      continue;
    StageReport& stage = stages[d.stage];
    stage.stage        = d.stage;
    ++stage.devices;
    stage.bubble_s += d.bubble_s;
    stage.bubble_fraction += fraction;
    if (stage.peak_memory_device < 0 || d.memory.total_bytes() > stage.memory.total_bytes()) {
      stage.peak_memory_device = d.device;
      stage.memory             = d.memory;
    }
  }
  for (auto& [index, stage] : stages) {
    stage.bubble_s /= stage.devices;
    stage.bubble_fraction /= stage.devices;
    report.stages.push_back(stage);
  }
  report.bubble.fraction = report.devices.empty() ? 0 : fractions / report.devices.size();
  // (pp - 1) / (m + pp - 1) of the window with equal stages and free transfers; interleaving divides the ramp
  // by the chunks per device (Narayanan et al., SC'21, §2.2.2). ZB-H1's bubble is (pp - 1)(F + B - W) against
  // 1F1B's (pp - 1)(F + B + W) (Qi et al. 2024, §3.1): a third of it with forward, input-gradient and
  // weight-gradient steps of equal length.
  const double ramp = plan.schedule == strategies::PipelineSchedule::zero_bubble ? 1.0 / 3 : 1.0;
  for (int micro_batches : plan.grad_accum)
    if (plan.pp > 1 && micro_batches > 0)
      report.bubble.ideal_fraction = std::max(
          report.bubble.ideal_fraction,
          ramp * (plan.pp - 1.0) /
              (static_cast<double>(plan.virtual_stages) * micro_batches + ramp * (plan.pp - 1.0)));
}

/// Of memory_bytes.framework, NCCL's buffers per communicator.
nlohmann::json nccl_memory_to_json(const strategies::NcclMemory& nccl)
{
  using units::whole_bytes;
  return {{"tensor_parallel", whole_bytes(nccl.tensor_parallel)}, {"data_parallel", whole_bytes(nccl.data_parallel)},
          {"pipeline", whole_bytes(nccl.pipeline)},                {"experts", whole_bytes(nccl.experts)},
          {"total", whole_bytes(nccl.total)}};
}

nlohmann::json memory_to_json(const strategies::DeviceMemory& memory)
{
  using units::whole_bytes;
  return {{"parameters", whole_bytes(memory.parameter_bytes)}, {"gradients", whole_bytes(memory.gradient_bytes)},
          {"optimizer", whole_bytes(memory.optimizer_bytes)},   {"activations", whole_bytes(memory.activation_bytes)},
          {"framework", whole_bytes(memory.framework_bytes)},   {"transient", whole_bytes(memory.transient_bytes)},
          {"workspace", whole_bytes(memory.workspace_bytes)}};
}

} // namespace

Report make_report(const strategies::Plan& plan, const strategies::Problem& problem,
                   const strategies::Schedule& schedule, const std::vector<TaskTiming>& timings)
{
  HETSIM_ASSERT(problem.cluster != nullptr && problem.workload != nullptr);
  HETSIM_ASSERT(timings.size() == schedule.tasks.size());
  const Cluster& cluster           = *problem.cluster;
  const models::Workload& workload = *problem.workload;

  Report report;
  report.cluster      = cluster.name();
  report.model        = workload.name;
  report.dtype        = std::string(dtype_name(plan.dtype));
  report.global_batch = plan.global_batch();
  report.seq_len      = workload.seq_len;
  for (const auto& t : timings)
    report.iteration_time_s = std::max(report.iteration_time_s, t.end_s);

  // Devices the plan uses, with their stage.
  std::map<int, int> stage_of;
  const int per_stage = std::max(1, plan.dp * plan.tp);
  for (std::size_t rank = 0; rank < plan.placement.size(); ++rank)
    stage_of[plan.placement[rank]] = static_cast<int>(rank) / per_stage;
  for (const auto& task : schedule.tasks)
    stage_of.emplace(task.device, task.stage);

  std::vector<std::vector<Interval>> compute(cluster.device_count());
  std::vector<std::vector<Interval>> comm(cluster.device_count());
  Interval window{1e300, -1e300}; // first forward to last backward, over all devices
  for (const auto& task : schedule.tasks) {
    const Interval interval{timings[task.id].start_s, timings[task.id].end_s};
    (task.stream == strategies::Stream::compute ? compute : comm)[task.device].push_back(interval);
    if (task.kind == strategies::TaskKind::forward || task.kind == strategies::TaskKind::backward) {
      window.first  = std::min(window.first, interval.first);
      window.second = std::max(window.second, interval.second);
    }
  }

  const std::vector<strategies::DeviceMemory> memory = strategies::plan_memory(plan, problem);
  const double time = report.iteration_time_s;
  double peak_flops = 0;
  std::vector<DeviceReport> figures;                    // of replayed devices, once computed
  std::vector<int> figured(cluster.device_count(), -1); // replayed devices: their index in `figures`
  for (const auto& [device, stage] : stage_of) {
    HETSIM_ASSERT(device >= 0 && device < cluster.device_count());
    DeviceReport d;
    d.device = device;
    d.gpu    = cluster.gpu_of(device).name;
    d.stage  = stage;
    // A device a folded replay did not replay did what the device standing for it did (strategies/lowering/fold.hpp):
    // its figures are computed once, for the replayed device, and copied.
    const int replayed = schedule.representative(device);
    if (replayed != device && figured[replayed] >= 0) {
      const DeviceReport& same = figures[figured[replayed]];
      d.compute_s              = same.compute_s;
      d.comm_s                 = same.comm_s;
      d.exposed_comm_s         = same.exposed_comm_s;
      d.idle_s                 = same.idle_s;
      d.bubble_s               = same.bubble_s;
    } else {
      std::vector<Interval> all = compute[replayed];
      all.insert(all.end(), comm[replayed].begin(), comm[replayed].end());
      d.compute_s          = union_length(compute[replayed]);
      d.comm_s             = union_length(comm[replayed]);
      const double busy_s  = union_length(all);
      d.exposed_comm_s     = std::max(0.0, busy_s - d.compute_s);
      d.idle_s             = std::max(0.0, time - busy_s);
      if (const auto [begin, end] = window; end > begin) {
        std::vector<Interval> inside;
        for (const auto& [s, e] : compute[replayed])
          if (std::min(e, end) > std::max(s, begin))
            inside.emplace_back(std::max(s, begin), std::min(e, end));
        d.bubble_s = std::max(0.0, end - begin - union_length(inside));
      }
      if (schedule.fold) { // kept for the devices it stands for, whatever their order
        figured[replayed] = static_cast<int>(figures.size());
        figures.push_back(d);
      }
    }
    if (static_cast<std::size_t>(device) < memory.size())
      d.memory = memory[device];
    peak_flops += cluster.gpu_of(device).peak_flops(plan.dtype);
    report.devices.push_back(std::move(d));
  }

  report.bubble.window_s = std::max(0.0, window.second - window.first);
  summarize_stages(plan, report);

  if (time > 0) {
    const double sequences   = static_cast<double>(report.global_batch);
    const double model_flops = sequences * workload.model_flops_per_sample();
    report.tokens_per_s      = sequences * workload.seq_len / time;
    report.tflops_per_s      = model_flops / time / units::kTera;
    report.mfu               = peak_flops > 0 ? model_flops / time / peak_flops : 0;
  }

  // The device whose compute holds the critical path up; the least idle one when no compute is on it.
  const CriticalPath path = critical_path(schedule, timings, cluster.device_count());
  const auto held_longest = std::max_element(path.compute_s.begin(), path.compute_s.end());
  const DeviceReport* bottleneck = nullptr;
  for (const auto& d : report.devices)
    if (held_longest != path.compute_s.end() && *held_longest > 0
            ? d.device == held_longest - path.compute_s.begin()
            : (!bottleneck || d.idle_s < bottleneck->idle_s))
      bottleneck = &d;
  if (bottleneck) {
    double path_compute_s = 0;
    for (double s : path.compute_s)
      path_compute_s += s;
    report.bottleneck.device        = bottleneck->device;
    report.bottleneck.bound         = path_compute_s >= path.communication_s ? "compute" : "communication";
    report.bottleneck.busy_fraction = time > 0 ? 1 - bottleneck->idle_s / time : 0;
    report.bottleneck.critical_compute_s = path.compute_s[bottleneck->device];
  }
  return report;
}

Report report_from_trace(const strategies::Plan& plan, const strategies::Problem& problem,
                         const strategies::Schedule& schedule, const traces::Trace& trace)
{
  std::vector<TaskTiming> timings(schedule.tasks.size());
  std::vector<char> seen(schedule.tasks.size(), 0);
  for (const auto& e : trace.events) {
    if (e.task_id < 0 || e.task_id >= static_cast<int>(timings.size()))
      throw InputError("trace: task id " + std::to_string(e.task_id) + " is not a task of the plan's schedule (" +
                       std::to_string(timings.size()) + " tasks)");
    timings[e.task_id] = TaskTiming{e.start_s, e.end_s};
    seen[e.task_id]    = 1;
  }
  for (std::size_t id = 0; id < seen.size(); ++id)
    if (!seen[id])
      throw InputError("trace: no event for task " + std::to_string(id) + " '" +
                       schedule.task_name(static_cast<int>(id)) + "' of the plan's schedule");
  Report report = make_report(plan, problem, schedule, timings);
  // A run at --scale S did S² of the model's FLOPs (strategies/lowering/scale.hpp), in the time it measured.
  const double done = trace.scale * trace.scale;
  report.tflops_per_s *= done;
  report.mfu *= done;
  return report;
}

nlohmann::json report_to_json(const Report& report)
{
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : report.devices)
    devices.push_back({{"device", d.device},
                       {"gpu", d.gpu},
                       {"stage", d.stage},
                       {"compute_s", d.compute_s},
                       {"comm_s", d.comm_s},
                       {"exposed_comm_s", d.exposed_comm_s},
                       {"idle_s", d.idle_s},
                       {"peak_memory_bytes", units::whole_bytes(d.memory.total_bytes())},
                       {"memory_capacity_bytes", units::whole_bytes(d.memory.capacity_bytes)},
                       {"memory_bytes", memory_to_json(d.memory)},
                       {"nccl_memory_bytes", nccl_memory_to_json(d.memory.nccl)},
                       {"bubble_s", d.bubble_s}});
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : report.stages)
    stages.push_back({{"stage", s.stage},
                      {"devices", s.devices},
                      {"bubble_s", s.bubble_s},
                      {"bubble_fraction", s.bubble_fraction},
                      {"peak_memory_device", s.peak_memory_device},
                      {"peak_memory_bytes", units::whole_bytes(s.memory.total_bytes())},
                      {"memory_bytes", memory_to_json(s.memory)},
                      {"nccl_memory_bytes", nccl_memory_to_json(s.memory.nccl)}});
  return {{"cluster", report.cluster},
          {"model", report.model},
          {"dtype", report.dtype},
          {"global_batch", report.global_batch},
          {"seq_len", report.seq_len},
          {"iteration_time_s", report.iteration_time_s},
          {"tokens_per_s", report.tokens_per_s},
          {"tflops_per_s", report.tflops_per_s},
          {"mfu", report.mfu},
          {"devices", devices},
          {"stages", stages},
          {"pipeline_bubble",
           {{"window_s", report.bubble.window_s},
            {"fraction", report.bubble.fraction},
            {"ideal_fraction", report.bubble.ideal_fraction}}},
          {"links", link_summary_to_json(report.links)},
          {"bottleneck",
           {{"device", report.bottleneck.device},
            {"bound", report.bottleneck.bound},
            {"busy_fraction", report.bottleneck.busy_fraction},
            {"critical_compute_s", report.bottleneck.critical_compute_s}}}};
}

void print_report(const Report& report, std::ostream& out, const std::string& title)
{
  const double time = report.iteration_time_s;
  std::map<std::string, int> gpu_counts;
  for (const auto& d : report.devices)
    ++gpu_counts[d.gpu];
  std::string mix;
  for (const auto& [gpu, count] : gpu_counts)
    mix += (mix.empty() ? "" : ", ") + gpu + " x" + std::to_string(count);

  out << title << ": " << report.model << " on " << report.cluster << '\n';
  print_table({{"iteration time", seconds(time) + " s"},
               {"throughput", with_commas(report.tokens_per_s) + " tokens/s"},
               {"model FLOP/s", format("%.2f", report.tflops_per_s) + " TFLOP/s"},
               {"MFU", percent(report.mfu)},
               {"devices", std::to_string(report.devices.size()) + " (" + mix + ")"}},
              out, false);
  out << '\n';

  const std::vector<std::string> header = {"device", "gpu",    "stage",  "compute s", "comm s",
                                           "exposed s", "idle s", "busy", "peak mem GiB"};
  auto device_row = [&](const DeviceReport& d) {
    return std::vector<std::string>{"dev" + std::to_string(d.device),
                                    d.gpu,
                                    stage_text(d.stage),
                                    seconds(d.compute_s),
                                    seconds(d.comm_s),
                                    seconds(d.exposed_comm_s),
                                    seconds(d.idle_s),
                                    percent(time > 0 ? 1 - d.idle_s / time : 0),
                                    gib(d.memory.total_bytes())};
  };

  if (static_cast<int>(report.devices.size()) <= kReportAllDevices) {
    std::vector<std::vector<std::string>> rows{header};
    for (const auto& d : report.devices)
      rows.push_back(device_row(d));
    print_table(rows, out);
  } else {
    // Summary per GPU type and stage (means), then the busiest devices.
    struct Group {
      int count = 0;
      double compute = 0, comm = 0, exposed = 0, idle = 0, min_idle = 1e300, peak = 0;
    };
    std::map<std::pair<std::string, int>, Group> groups;
    for (const auto& d : report.devices) {
      Group& g = groups[{d.gpu, d.stage}];
      ++g.count;
      g.compute += d.compute_s, g.comm += d.comm_s, g.exposed += d.exposed_comm_s, g.idle += d.idle_s;
      g.min_idle = std::min(g.min_idle, d.idle_s);
      g.peak     = std::max(g.peak, d.memory.total_bytes());
    }
    out << "per GPU type and stage (means over the devices; peak memory is the maximum):\n";
    std::vector<std::vector<std::string>> rows{
        {"gpu", "stage", "devices", "compute s", "comm s", "exposed s", "idle s", "min idle s", "peak mem GiB"}};
    for (const auto& [key, g] : groups)
      rows.push_back({key.first, stage_text(key.second), std::to_string(g.count), seconds(g.compute / g.count),
                      seconds(g.comm / g.count), seconds(g.exposed / g.count), seconds(g.idle / g.count),
                      seconds(g.min_idle), gib(g.peak)});
    print_table(rows, out);
    out << '\n' << "busiest " << kReportTopDevices << " devices (least idle):\n";
    std::vector<const DeviceReport*> order;
    for (const auto& d : report.devices)
      order.push_back(&d);
    std::stable_sort(order.begin(), order.end(),
                     [](const DeviceReport* a, const DeviceReport* b) { return a->idle_s < b->idle_s; });
    order.resize(kReportTopDevices);
    std::vector<std::vector<std::string>> top{header};
    for (const auto* d : order)
      top.push_back(device_row(*d));
    print_table(top, out);
  }

  if (!report.stages.empty()) {
    out << "\nper stage: compute idle inside the pipelines' window (bubble, mean over the stage's devices) and the "
           "fullest device's memory by term, GiB:\n";
    std::vector<std::vector<std::string>> rows{{"stage", "devices", "bubble s", "bubble", "fullest", "params",
                                                "grads", "optimizer", "activations", "framework", "(nccl)",
                                                "transient", "workspace", "total", "of"}};
    for (const auto& st : report.stages) {
      const auto& m = st.memory;
      rows.push_back({std::to_string(st.stage), std::to_string(st.devices), seconds(st.bubble_s),
                      percent(st.bubble_fraction), "dev" + std::to_string(st.peak_memory_device),
                      gib(m.parameter_bytes), gib(m.gradient_bytes), gib(m.optimizer_bytes), gib(m.activation_bytes),
                      gib(m.framework_bytes), gib(m.nccl.total), gib(m.transient_bytes), gib(m.workspace_bytes),
                      gib(m.total_bytes()),
                      gib(m.capacity_bytes)});
    }
    print_table(rows, out);
    out << "pipeline bubble: " << percent(report.bubble.fraction) << " of the " << seconds(report.bubble.window_s)
        << " s from the first forward to the last backward (mean over devices)";
    if (report.bubble.ideal_fraction > 0)
      out << "; equal stages and free communication would give " << percent(report.bubble.ideal_fraction);
    out << '\n';
  }
  print_link_summary(report.links, out);

  if (report.bottleneck.device >= 0) {
    const DeviceReport* b = nullptr;
    for (const auto& d : report.devices)
      if (d.device == report.bottleneck.device)
        b = &d;
    out << "\nbottleneck: dev" << b->device << " (" << b->gpu << ", stage " << stage_text(b->stage) << ") is busy "
        << percent(report.bottleneck.busy_fraction) << " of the iteration, " << report.bottleneck.bound
        << "-bound (compute " << seconds(b->compute_s) << " s, exposed communication " << seconds(b->exposed_comm_s)
        << " s)\n";
  }
}

double exposed_comm_share(const Report& report)
{
  double most = 0;
  for (const DeviceReport& device : report.devices)
    most = std::max(most, device.exposed_comm_s);
  return report.iteration_time_s > 0 ? most / report.iteration_time_s : 0;
}

} // namespace hetsim::sim
