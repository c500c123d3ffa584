#include "traces/validate.hpp"

#include "core/error.hpp"
#include "traces/kernel_events.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace hetsim::traces {
namespace {

double iteration_s(const Trace& trace)
{
  if (trace.events.empty())
    return 0;
  double first = trace.events.front().start_s, last = trace.events.front().end_s;
  for (const auto& e : trace.events) {
    first = std::min(first, e.start_s);
    last  = std::max(last, e.end_s);
  }
  return last - first;
}

std::string number(double value)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

std::vector<double> ranks(const std::vector<double>& values)
{
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
      ++j;
    for (std::size_t k = i; k <= j; ++k)
      out[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    i = j + 1;
  }
  return out;
}

} // namespace

Comparison compare_traces(const Trace& measured, const Trace& predicted)
{
  std::map<int, const TraceEvent*> simulated;
  for (const auto& e : predicted.events)
    simulated[e.task_id] = &e;
  if (simulated.size() != measured.events.size())
    throw InputError("validate: the measured trace has " + std::to_string(measured.events.size()) +
                     " tasks but the plan's schedule has " + std::to_string(simulated.size()) +
                     "; was it measured with this plan?");
  Comparison out;
  out.measured_iteration_s  = iteration_s(measured);
  out.predicted_iteration_s = iteration_s(predicted);
  if (out.measured_iteration_s > 0)
    out.iteration_error = (out.predicted_iteration_s - out.measured_iteration_s) / out.measured_iteration_s;
  std::map<std::string, std::vector<double>> errors;
  for (const auto& e : measured.events) {
    auto it = simulated.find(e.task_id);
    if (it == simulated.end())
      throw InputError("validate: task " + std::to_string(e.task_id) + " " + quote(e.name) +
                       " of the measured trace is not in the plan's schedule");
    // Bytes tell a trace of another plan or another --scale apart even when the task ids agree.
    const double bytes = it->second->bytes;
    if (e.bytes > 0 && std::abs(e.bytes - bytes) > 1e-9 * std::max(e.bytes, bytes))
      throw InputError("validate: task " + std::to_string(e.task_id) + " " + quote(e.name) + " moved " + number(e.bytes) +
                       " bytes in the measured trace but " + number(bytes) +
                       " in the plan's schedule; was it measured with this plan (and at the scale the trace records)?");
    const double real = e.end_s - e.start_s;
    const double sim  = it->second->end_s - it->second->start_s;
    KindError& kind   = out.by_kind[e.kind];
    ++kind.tasks;
    kind.measured_s += real;
    kind.predicted_s += sim;
    if (real > 0)
      errors[e.kind].push_back(std::abs(sim - real) / real);
  }
  for (auto& [kind, values] : errors) {
    std::sort(values.begin(), values.end());
    out.by_kind[kind].median_abs_error = values[values.size() / 2];
  }
  if (!measured.kernels.empty() && !predicted.kernels.empty()) {
    if (measured.kernels.size() != predicted.kernels.size())
      throw InputError("validate: the measured trace has " + std::to_string(measured.kernels.size()) +
                       " kernels but the plan's schedule launches " + std::to_string(predicted.kernels.size()) +
                       "; was it measured with this plan and model?");
    const auto predicted_totals = kernel_totals(predicted.kernels);
    for (const auto& [name, total] : kernel_totals(measured.kernels)) {
      KernelError& k = out.by_kernel[name];
      k.kernels      = total.count;
      k.measured_s   = total.seconds;
      if (auto it = predicted_totals.find(name); it != predicted_totals.end())
        k.predicted_s = it->second.seconds;
      if (k.measured_s > 0)
        k.error = (k.predicted_s - k.measured_s) / k.measured_s;
    }
  }
  return out;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b)
{
  HETSIM_ASSERT(a.size() == b.size());
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n  = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

} // namespace hetsim::traces
