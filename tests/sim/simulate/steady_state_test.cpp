/// Micro-batch folding (sim/simulate/steady_state.hpp) against replaying every micro-batch: the same iteration,
/// device figures and link usage to within floating-point noise, on a data-centre preset and a worldwide one.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "sim/simulate/steady_state.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace hetsim;

namespace {

/// Relative agreement asked of a repeated replay: SimGrid times to 1e-9 s, repeated some hundred times.
constexpr double kAgreement = 1e-7;

struct Both {
  sim::SimResult repeated;
  sim::SimResult whole;
};

Both simulate_both(const Cluster& cluster, const models::Workload& workload, const nlohmann::json& json)
{
  const strategies::Plan plan = strategies::plan_from_json(json, "steady_state_test plan", cluster, workload);
  const auto problem          = strategies::problem_for_plan(cluster, workload, plan);
  const strategies::Schedule schedule = strategies::lower_for_replay(plan, problem, false);
  sim::SimOptions options;
  options.links = true;
  Both both;
  both.repeated = sim::simulate(plan, problem, schedule, options);
  options.exact = true;
  both.whole    = sim::simulate(plan, problem, schedule, options);
  return both;
}

void check_same(const sim::Report& a, const sim::Report& b)
{
  const double time = b.iteration_time_s;
  CHECK(a.iteration_time_s == doctest::Approx(time).epsilon(kAgreement));
  REQUIRE(a.devices.size() == b.devices.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.devices.size(); ++i)
    for (const auto& [x, y] : {std::pair{a.devices[i].compute_s, b.devices[i].compute_s},
                               std::pair{a.devices[i].comm_s, b.devices[i].comm_s},
                               std::pair{a.devices[i].idle_s, b.devices[i].idle_s},
                               std::pair{a.devices[i].exposed_comm_s, b.devices[i].exposed_comm_s},
                               std::pair{a.devices[i].bubble_s, b.devices[i].bubble_s}})
      worst = std::max(worst, std::abs(x - y) / std::max(time, std::abs(y)));
  CHECK(worst <= kAgreement);
  REQUIRE(a.links.kinds.size() == b.links.kinds.size());
  for (std::size_t k = 0; k < a.links.kinds.size(); ++k) {
    CAPTURE(b.links.kinds[k].kind);
    CHECK(a.links.kinds[k].bytes == doctest::Approx(b.links.kinds[k].bytes).epsilon(kAgreement));
    CHECK(a.links.kinds[k].used_links == b.links.kinds[k].used_links);
    CHECK(a.links.kinds[k].max_utilisation == doctest::Approx(b.links.kinds[k].max_utilisation).epsilon(kAgreement));
    CHECK(a.links.kinds[k].mean_utilisation ==
          doctest::Approx(b.links.kinds[k].mean_utilisation).epsilon(kAgreement));
  }
  REQUIRE(a.links.top_by_busy_time.size() == b.links.top_by_busy_time.size());
  for (std::size_t l = 0; l < a.links.top_by_busy_time.size(); ++l)
    CHECK(a.links.top_by_busy_time[l].busy_s ==
          doctest::Approx(b.links.top_by_busy_time[l].busy_s).epsilon(kAgreement));
}

} // namespace

TEST_CASE("a 1F1B pipeline's steady state replayed once and repeated gives the iteration of every micro-batch")
{
  const struct {
    const char* preset;
    const char* model;
    nlohmann::json plan;
    bool folds; ///< whether its steady state shows within the shortened replay
  } cases[] = {
      // tensor parallelism inside nodes, two replicas' pipelines: a period of four micro-batches
      {"case1_datacenter_on_demand", "gpt3-1.3b",
       {{"tp", 8}, {"pp", 4}, {"dp", 2}, {"micro_batch", 1}, {"grad_accum", 72}, {"zero_stage", 1}}, true},
      // no pipeline: gradient accumulation alone
      {"case1_datacenter_on_demand", "gpt2-medium",
       {{"tp", 1}, {"pp", 1}, {"dp", 64}, {"micro_batch", 2}, {"grad_accum", 72}}, true},
      // eight regions, stages across WAN links of different speeds: a period of two micro-batches
      {"case5_worldwide_geo", "gpt2-medium",
       {{"tp", 1}, {"pp", 8}, {"dp", 8}, {"micro_batch", 1}, {"grad_accum", 96}}, true},
      // transfers of 16 replicas meeting on shared NICs: the replay settles slowly, finds no steady state in its
      // shortened run and replays every micro-batch
      {"case1_datacenter_on_demand", "gpt2-medium",
       {{"tp", 1}, {"pp", 4}, {"dp", 16}, {"micro_batch", 2}, {"grad_accum", 72}, {"zero_stage", 1}}, false},
  };
  for (const auto& c : cases) {
    CAPTURE(std::string(c.preset));
    CAPTURE(c.plan.dump());
    const Cluster cluster           = load_cluster(std::string("preset:") + c.preset);
    const models::Workload workload = models::load_workload(std::string("preset:") + c.model);
    const Both both                 = simulate_both(cluster, workload, c.plan);
    REQUIRE(both.repeated.repeated.has_value());
    const sim::RepeatedMicroBatches& repeated = *both.repeated.repeated;
    CHECK((repeated.period_s > 0) == c.folds);
    CHECK(repeated.replayed < repeated.micro_batches);
    CHECK_FALSE(both.whole.repeated.has_value());
    MESSAGE(std::string(c.model) << " on " << std::string(c.preset) << " " << c.plan.dump() << ": " << repeated.replayed << " of "
                    << repeated.micro_batches << " micro-batches, period " << repeated.period_s << " s; "
                    << both.repeated.report.iteration_time_s << " s against " << both.whole.report.iteration_time_s
                    << " s");
    check_same(both.repeated.report, both.whole.report);
  }
}

TEST_CASE("micro-batch folding leaves alone schedules it cannot repeat and plans of too few micro-batches")
{
  const Cluster cluster       = load_cluster("preset:case1_datacenter_on_demand");
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  const auto plan             = [&](nlohmann::json json) {
    return strategies::plan_from_json(json, "steady_state_test plan", cluster, gpt2);
  };
  const nlohmann::json base = {{"tp", 1}, {"pp", 4}, {"dp", 16}, {"micro_batch", 1}, {"grad_accum", 72}};
  const int replayed = sim::steady_state_micro_batches(plan(base));
  CHECK(replayed > 4);
  CHECK((72 - replayed) % sim::kRepeatedMultiple == 0);
  nlohmann::json few = base, gpipe = base, interleaved = base;
  few["grad_accum"] = 40; // 40 replayed of 40: the fold would save nothing
  gpipe["schedule"] = "gpipe";
  interleaved["virtual_stages"] = 2;
  for (const auto& json : {few, gpipe, interleaved}) {
    CAPTURE(json.dump());
    CHECK(sim::steady_state_micro_batches(plan(json)) == 0);
  }
}

TEST_CASE("a replay whose tasks do not repeat by one period has no steady state")
{
  const Cluster cluster       = load_cluster("preset:case1_datacenter_on_demand");
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  const strategies::Plan plan = strategies::plan_from_json(
      {{"tp", 1}, {"pp", 1}, {"dp", 64}, {"micro_batch", 2}, {"grad_accum", 36}}, "plan", cluster, gpt2);
  const auto problem                  = strategies::problem_for_plan(cluster, gpt2, plan);
  const strategies::Schedule schedule = strategies::lower(plan, problem);
  const auto timings =
      sim::replay_isolated(cluster, schedule, sim::replay_options_for(plan, problem, schedule, sim::SimOptions{}));
  const auto steady = sim::find_steady_state(schedule, timings); // as the replay gave them
  REQUIRE(steady.has_value());
  CHECK(steady->micro_batches == 1);
  // Each micro-batch a little slower than the one before: no two periods alike.
  auto drifting = timings;
  for (const auto& task : schedule.tasks)
    if (task.micro_batch >= 0) {
      drifting[task.id].start_s *= 1 + 1e-4 * task.micro_batch;
      drifting[task.id].end_s *= 1 + 1e-4 * task.micro_batch;
    }
  CHECK_FALSE(sim::find_steady_state(schedule, drifting).has_value());
  // The full plan's tasks line up with the repeated ones; those of another plan, or another count, do not.
  const strategies::Plan full = sim::with_micro_batches(plan, 72);
  strategies::Plan wider      = full;
  wider.micro_batch.assign(wider.micro_batch.size(), 4);
  const strategies::Schedule full_tasks = strategies::lower(full, problem);
  CHECK(sim::repeat_steady_state(schedule, timings, *steady, 36, full_tasks).has_value());
  CHECK_FALSE(sim::repeat_steady_state(schedule, timings, *steady, 36, strategies::lower(wider, problem)).has_value());
  CHECK_FALSE(sim::repeat_steady_state(schedule, timings, *steady, 35, full_tasks).has_value());
}
