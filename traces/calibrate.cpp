#include "traces/calibrate.hpp"

#include "core/error.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <map>

namespace hetsim::traces {
namespace {

double median(std::vector<double> values)
{
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

/// One observation of a link class: `seconds` for `steps` steps of `step_bytes` each.
struct Transfer {
  double steps      = 1;
  double step_bytes = 0;
  double seconds    = 0;
};

costmodel::LinkCalibration fit_link(const std::string& name, const std::vector<Transfer>& transfers)
{
  const auto rows = static_cast<Eigen::Index>(transfers.size());
  Eigen::MatrixXd a(rows, 2);
  Eigen::VectorXd y(rows);
  // Columns scaled to similar magnitudes so that the solve stays well conditioned (bytes are ~1e6, steps ~1).
  double byte_scale = 0;
  for (const auto& t : transfers)
    byte_scale = std::max(byte_scale, t.steps * t.step_bytes);
  if (byte_scale <= 0)
    throw InputError("calibrate: link class " + name + ": every transfer is empty; nothing to fit β on");
  bool distinct_sizes = false;
  for (Eigen::Index i = 0; i < rows; ++i) {
    const Transfer& t = transfers[i];
    a(i, 0) = t.steps;
    a(i, 1) = t.steps * t.step_bytes / byte_scale;
    y(i)    = t.seconds;
    distinct_sizes |= t.step_bytes != transfers.front().step_bytes;
  }
  costmodel::LinkCalibration link;
  if (distinct_sizes) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(y);
    link.alpha_s               = x(0);
    link.beta_seconds_per_byte = x(1) / byte_scale;
  }
  // One size cannot separate latency from bandwidth, and a negative latency is noise: fit β alone through 0.
  if (!distinct_sizes || link.alpha_s < 0) {
    const Eigen::VectorXd column = a.col(1);
    link.alpha_s               = 0;
    link.beta_seconds_per_byte = column.dot(y) / column.squaredNorm() / byte_scale;
  }
  if (!(link.beta_seconds_per_byte > 0))
    throw InputError("calibrate: link class " + name + ": the transfers do not grow with their size; no β fits");
  return link;
}

} // namespace

costmodel::Calibration calibrate(const std::vector<Trace>& traces, std::vector<std::string>* skipped)
{
  std::map<std::pair<std::string, double>, std::vector<double>> efficiencies; // (gpu, tokens) -> samples
  std::map<std::string, std::vector<Transfer>> transfers;                      // link class -> observations
  for (std::size_t t = 0; t < traces.size(); ++t) {
    const Trace& trace = traces[t];
    // Collectives: the shortest member span of each, keyed by its index in this trace's schedule.
    std::map<int, std::pair<const TraceEvent*, double>> collectives;
    for (const auto& e : trace.events) {
      const double seconds = e.end_s - e.start_s;
      if (seconds <= 0)
        continue;
      if ((e.kind == "forward" || e.kind == "backward") && e.flops > 0 && e.tokens > 0 &&
          e.device < static_cast<int>(trace.devices.size())) {
        const TraceDevice& device = trace.devices[e.device];
        efficiencies[{device.gpu, e.tokens}].push_back(e.flops / (seconds * device.peak_flops));
      } else if (e.kind == "send" && !e.link.empty()) {
        transfers[e.link].push_back(Transfer{1, e.bytes, seconds});
      } else if (e.collective >= 0 && e.members > 1 && !e.link.empty()) {
        auto [it, fresh] = collectives.try_emplace(e.collective, &e, seconds);
        if (!fresh && seconds < it->second.second)
          it->second = {&e, seconds};
      }
    }
    for (const auto& [index, shortest] : collectives) {
      const TraceEvent& e = *shortest.first;
      const double n      = e.members;
      const double steps  = e.kind == "all_reduce" ? 2 * (n - 1) : n - 1;
      transfers[e.link].push_back(Transfer{steps, e.bytes / n, shortest.second});
    }
  }
  if (efficiencies.empty() && transfers.empty())
    throw InputError("calibrate: the traces hold no timed compute with FLOPs and tokens and no annotated transfers "
                     "(calibrate needs traces written by `hetsim run`)");

  costmodel::Calibration calibration;
  for (const auto& [key, samples] : efficiencies)
    calibration.efficiency_points[key.first].emplace_back(key.second, std::min(1.0, median(samples)));
  for (const auto& [name, observed] : transfers) {
    try {
      calibration.links[name] = fit_link(name, observed);
    } catch (const InputError& e) {
      if (skipped)
        skipped->push_back(e.what());
    }
  }
  return calibration;
}

} // namespace hetsim::traces
