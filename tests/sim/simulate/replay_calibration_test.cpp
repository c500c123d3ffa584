// Link calibration through the simulator: runs whose transfers share a link must not be read as a slow link.
#include "core/cluster_json.hpp"
#include "costmodel/link_class.hpp"
#include "models/workload.hpp"
#include "sim/simulate/replay_calibration.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"
#include "traces/calibrate.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>

namespace hetsim::sim {
namespace {

const std::string kData = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/netns/";

/// One calibration run of the emulated two-region network, simulated on the "true" links.
struct SimulatedRun {
  strategies::Plan plan;
  strategies::Problem problem;
  strategies::Schedule schedule;
  traces::Trace trace;
};

std::unique_ptr<SimulatedRun> simulated_run(const std::string& plan_file, const Cluster& truth,
                                            const models::Workload& workload,
                                            const costmodel::Calibration& true_calibration)
{
  auto run      = std::make_unique<SimulatedRun>();
  run->plan     = strategies::load_plan(plan_file, truth, workload);
  run->problem  = strategies::problem_for_plan(truth, workload, run->plan);
  run->schedule = strategies::lower(run->plan, run->problem);
  SimOptions options;
  options.calibration = &true_calibration;
  run->trace          = simulate(run->plan, run->problem, run->schedule, options).trace;
  return run;
}

TEST_CASE("replaying the calibration runs recovers a link that the runs shared")
{
  const Cluster cluster           = load_cluster(kData + "cluster.json");
  const models::Workload workload = models::load_workload(kData + "model.json");
  // The truth: WAN at 80 Mbit/s with 2 ms latency, NICs at 0.9 Gbit/s.
  costmodel::Calibration truth_fit;
  truth_fit.efficiency_points["cpu"] = {{64, 0.3}, {128, 0.35}};
  truth_fit.links["inter_region"]    = {2e-3, 8 / 80e6};
  truth_fit.links["inter_node"]      = {1e-4, 8 / 0.9e9};
  const Cluster truth = costmodel::calibrated_cluster(cluster, truth_fit);

  // cal_pp2dp2 sends two pipeline flows over the one WAN link at once; pp4 (1F1B, micro-batch 2) one at a time.
  std::vector<std::unique_ptr<SimulatedRun>> runs;
  std::vector<traces::Trace> measured;
  const std::string exec_data = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/";
  for (const std::string& file : {kData + "cal_pp2dp2.json", exec_data + "pp4.json", kData + "cal_dp4.json"}) {
    runs.push_back(simulated_run(file, truth, workload, truth_fit));
    measured.push_back(runs.back()->trace);
  }
  std::vector<std::string> skipped;
  const costmodel::Calibration direct = traces::calibrate(measured, &skipped);
  for (const auto& line : skipped)
    MESSAGE(line);
  REQUIRE(direct.links.count("inter_node") == 1);
  REQUIRE(direct.links.count("inter_region") == 1);
  const double true_beta              = truth_fit.links["inter_region"].beta_seconds_per_byte;
  const double direct_error = direct.links.at("inter_region").beta_seconds_per_byte / true_beta - 1;
  CHECK(direct_error > 0.05); // the shared link reads as a slower one

  std::vector<CalibrationRun> replayed;
  for (std::size_t i = 0; i < runs.size(); ++i)
    replayed.push_back({&measured[i], &runs[i]->plan, &runs[i]->schedule, runs[i]->problem});
  std::vector<ReplayFitRound> rounds;
  const costmodel::Calibration refined = fit_links_by_replay(direct, cluster, replayed, 8, 0.001, &rounds);
  CHECK(rounds.size() >= 2);
  // Each link's time for a transfer of the runs' typical size (a 400 kB activation), on an idle link.
  for (const auto& [link, fit] : truth_fit.links) {
    const auto& got      = refined.links.at(link);
    const double bytes   = 4e5;
    const double seconds = got.alpha_s + got.beta_seconds_per_byte * bytes;
    const double truth_s = fit.alpha_s + fit.beta_seconds_per_byte * bytes;
    INFO(link << ": " << seconds << " s against " << truth_s << " (direct fit "
              << direct.links.at(link).alpha_s + direct.links.at(link).beta_seconds_per_byte * bytes << ")");
    CHECK(seconds == doctest::Approx(truth_s).epsilon(0.02).scale(0));
  }
  CHECK(refined.efficiency_points == direct.efficiency_points); // compute is left as fitted
}

} // namespace
} // namespace hetsim::sim

namespace hetsim::sim {
namespace {

TEST_CASE("a calibrated collective overhead is waited by every member of every collective of its class")
{
  const Cluster cluster            = load_cluster(kData + "cluster.json");
  const models::Workload workload  = models::load_workload(kData + "model.json");
  const strategies::Plan plan      = strategies::load_plan(kData + "dp4_zero1.json", cluster, workload);
  const strategies::Problem problem = strategies::problem_for_plan(cluster, workload, plan);
  const strategies::Schedule schedule = strategies::lower(plan, problem);
  costmodel::Calibration without;
  without.links["inter_region"] = {1e-4, 8 / 100e6};
  costmodel::Calibration with = without;
  with.links["inter_region"].collective_overhead_s = 5e-3;

  auto run = [&](const costmodel::Calibration& calibration) {
    SimOptions options;
    options.calibration = &calibration;
    return simulate(plan, problem, schedule, options);
  };
  const SimResult a = run(without), b = run(with);
  std::map<int, double> span_a;
  for (const auto& e : a.trace.events)
    span_a[e.task_id] = e.end_s - e.start_s;
  int collectives = 0;
  for (const auto& e : b.trace.events)
    if (strategies::is_collective(schedule.tasks[e.task_id].kind)) {
      ++collectives;
      CHECK(e.end_s - e.start_s == doctest::Approx(span_a[e.task_id] + 5e-3).epsilon(1e-6).scale(0));
    }
  CHECK(collectives == 8); // a reduce-scatter and an all-gather on each of the four ranks
  // The two collectives are in series on every rank.
  CHECK(b.report.iteration_time_s == doctest::Approx(a.report.iteration_time_s + 10e-3).epsilon(1e-6).scale(0));
}

} // namespace
TEST_CASE("a calibrated cluster keeps its nodes' fabric and transport, the calibrated NIC rate as measured")
{
  Cluster cluster = load_cluster(kData + "cluster.json");
  cluster.set_fabric(0, IntraFabric::pcie);
  cluster.set_transport(0, NicTransport::socket);
  costmodel::Calibration fit;
  const Cluster uncalibrated = costmodel::calibrated_cluster(cluster, fit);
  CHECK(uncalibrated.nodes()[0].fabric == IntraFabric::pcie);
  CHECK(uncalibrated.nodes()[0].transport == NicTransport::socket);
  CHECK(uncalibrated.nodes()[0].nic.bandwidth_bytes_per_s == cluster.nodes()[0].nic.bandwidth_bytes_per_s);
  CHECK_FALSE(uncalibrated.nodes()[0].socket_rate_measured);
  fit.links["inter_node"] = {1e-4, 8 / 0.5e9};
  const Cluster calibrated = costmodel::calibrated_cluster(cluster, fit);
  CHECK(calibrated.nodes()[0].transport == NicTransport::socket);
  CHECK(calibrated.nodes()[0].nic.bandwidth_bytes_per_s == doctest::Approx(0.5e9 / 8));
  CHECK(calibrated.nodes()[0].socket_rate_measured);
}

} // namespace hetsim::sim
