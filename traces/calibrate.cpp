#include "traces/calibrate.hpp"

#include "core/error.hpp"
#include "core/median.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <map>

namespace hetsim::traces {
namespace {

/// One observation of a link class: `seconds` for `steps` steps of `step_bytes` each, by a send or a collective.
struct Transfer {
  double steps      = 1;
  double step_bytes = 0;
  double seconds    = 0;
  bool collective   = false;
};

/// The given columns of `a`, in that order.
Eigen::MatrixXd columns_of(const Eigen::MatrixXd& a, const std::vector<int>& columns)
{
  Eigen::MatrixXd used(a.rows(), static_cast<Eigen::Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j)
    used.col(static_cast<Eigen::Index>(j)) = a.col(columns[j]);
  return used;
}

/// Least squares of the observations on the given columns of [steps, steps·bytes, collective]; the unused ones
/// get 0.
Eigen::Vector3d solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, const std::vector<int>& columns)
{
  const Eigen::VectorXd x = columns_of(a, columns).colPivHouseholderQr().solve(y);
  Eigen::Vector3d full    = Eigen::Vector3d::Zero();
  for (std::size_t j = 0; j < columns.size(); ++j)
    full(columns[j]) = x(static_cast<Eigen::Index>(j));
  return full;
}

/// Fits `seconds = steps · (α + β · step bytes) + γ · [collective]`, with α and γ left out (0) when the
/// observations cannot separate them or when they come out negative, which is noise.
costmodel::LinkCalibration fit_link(const std::string& name, const std::vector<Transfer>& transfers)
{
  const auto rows = static_cast<Eigen::Index>(transfers.size());
  Eigen::MatrixXd a(rows, 3);
  Eigen::VectorXd y(rows);
  // Columns scaled to similar magnitudes so that the solve stays well conditioned (bytes are ~1e6, steps ~1).
  double byte_scale = 0;
  for (const auto& t : transfers)
    byte_scale = std::max(byte_scale, t.steps * t.step_bytes);
  if (byte_scale <= 0)
    throw InputError("calibrate: link class " + name + ": every transfer is empty; nothing to fit β on");
  bool distinct_sizes = false, sends = false, collectives = false;
  for (Eigen::Index i = 0; i < rows; ++i) {
    const Transfer& t = transfers[i];
    // Each row weighted by 1 / its duration: the noise is relative, and durations span orders of magnitude, so
    // plain least squares would let the largest transfers decide α (a small fraction of their time) alone.
    const double weight = 1 / t.seconds;
    a(i, 0) = weight * t.steps;
    a(i, 1) = weight * t.steps * t.step_bytes / byte_scale;
    a(i, 2) = weight * (t.collective ? 1 : 0);
    y(i)    = 1;
    distinct_sizes |= t.step_bytes != transfers.front().step_bytes;
    (t.collective ? collectives : sends) = true;
  }
  // A collective's own cost needs both sends and collectives; latency needs two sizes. Terms go in that order,
  // and the last ones are dropped while the observations cannot tell them apart (sends of one size, collective
  // steps of another: three unknowns, two groups). The collective cost is kept before latency: calibration
  // runs on a cluster are of that shape, and there the per-call cost of a collective library is the larger.
  std::vector<int> columns{1};
  if (sends && collectives)
    columns.push_back(2);
  if (distinct_sizes)
    columns.push_back(0);
  while (columns.size() > 1 &&
         static_cast<std::size_t>(columns_of(a, columns).colPivHouseholderQr().rank()) < columns.size())
    columns.pop_back();
  // A term that comes out negative is noise: drop it and solve again.
  Eigen::Vector3d x = solve(a, y, columns);
  while (columns.size() > 1) {
    const auto negative = std::find_if(columns.begin() + 1, columns.end(), [&](int c) { return x(c) < 0; });
    if (negative == columns.end())
      break;
    columns.erase(negative);
    x = solve(a, y, columns);
  }
  costmodel::LinkCalibration link;
  link.alpha_s               = x(0);
  link.beta_seconds_per_byte = x(1) / byte_scale;
  link.collective_overhead_s = x(2);
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
      } else if (e.collective >= 0 && e.members > 1 && !e.link.empty() && e.kind != "all_to_all") {
        // (An all-to-all's n - 1 flows run at once, not as ring steps: not a point on the ring's line.)
        auto [it, fresh] = collectives.try_emplace(e.collective, &e, seconds);
        if (!fresh && seconds < it->second.second)
          it->second = {&e, seconds};
      }
    }
    for (const auto& [index, shortest] : collectives) {
      const TraceEvent& e = *shortest.first;
      const double n      = e.members;
      const double steps  = e.kind == "all_reduce" ? 2 * (n - 1) : n - 1;
      transfers[e.link].push_back(Transfer{steps, e.bytes / n, shortest.second, true});
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
