#include "sim/simulate/replay_calibration.hpp"

#include "costmodel/link_class.hpp"
#include "sim/simulate/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace hetsim::sim {
namespace {

/// Communication time per link class of a trace (measured, or simulated: both carry the link annotations):
/// transfers by their span; collectives from the moment their last member joined to the moment their last member
/// finished. That counts neither waiting for a late peer's compute nor less than the whole exchange: a ring's
/// last member to arrive can finish well before the others have passed on what they hold (a 4-member
/// reduce-scatter over the slow link: 127 ms against 185 ms for its neighbours).
std::map<std::string, double> communication_seconds(const traces::Trace& trace)
{
  struct Window {
    std::string link;
    double last_start = 0, last_end = 0;
  };
  std::map<std::string, double> seconds;
  std::map<int, Window> collectives;
  for (const auto& e : trace.events) {
    if (e.link.empty() || e.kind == "recv")
      continue;
    if (e.collective < 0) {
      seconds[e.link] += e.end_s - e.start_s;
      continue;
    }
    auto [window, fresh] = collectives.try_emplace(e.collective, Window{e.link, e.start_s, e.end_s});
    if (!fresh) {
      window->second.last_start = std::max(window->second.last_start, e.start_s);
      window->second.last_end   = std::max(window->second.last_end, e.end_s);
    }
  }
  for (const auto& [index, window] : collectives)
    seconds[window.link] += window.last_end - window.last_start;
  return seconds;
}

} // namespace

costmodel::Calibration fit_links_by_replay(const costmodel::Calibration& first_fit, const Cluster& cluster,
                                           std::vector<CalibrationRun> runs, int rounds, double tolerance,
                                           std::vector<ReplayFitRound>* log)
{
  costmodel::Calibration calibration = first_fit;
  std::map<std::string, double> measured;
  for (const auto& run : runs)
    for (const auto& [link, seconds] : communication_seconds(*run.measured))
      measured[link] += seconds;

  for (int round = 0; round < rounds; ++round) {
    const Cluster calibrated = costmodel::calibrated_cluster(cluster, calibration);
    std::map<std::string, double> simulated;
    for (auto& run : runs) {
      run.problem.cluster = &calibrated;
      SimOptions options;
      options.calibration     = &calibration;
      options.exact           = true; // compared task by task, on the schedule the run measured
      const SimResult result = simulate(*run.plan, run.problem, *run.schedule, options);
      for (const auto& [link, seconds] : communication_seconds(result.trace))
        simulated[link] += seconds;
    }
    ReplayFitRound moved;
    bool converged = true;
    for (auto& [link, fit] : calibration.links) {
      const auto m = measured.find(link), s = simulated.find(link);
      if (m == measured.end() || s == simulated.end() || !(s->second > 0) || !(m->second > 0))
        continue; // no communication of this class in the runs: nothing to compare
      const double scale = m->second / s->second;
      fit.alpha_s *= scale;
      fit.beta_seconds_per_byte *= scale;
      moved.scale.emplace_back(link, scale);
      converged = converged && std::abs(scale - 1) <= tolerance;
    }
    if (log)
      log->push_back(std::move(moved));
    if (converged)
      break;
  }
  return calibration;
}

} // namespace hetsim::sim
