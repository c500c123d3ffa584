/// The two plan fields the batch-splitting and per-layer-sharding planners need: last_micro_batch and
/// layer_sharding, through JSON, memory, the estimate and lowering.

#include "core/error.hpp"
#include "fixtures.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;
using nlohmann::json;

namespace {

int count_tasks(const Schedule& schedule, TaskKind kind, double bytes = -1)
{
  int count = 0;
  for (const Task& task : schedule.tasks)
    if (task.kind == kind && (bytes < 0 || task.bytes == doctest::Approx(bytes)))
      ++count;
  return count;
}

} // namespace

TEST_CASE("layer_sharding and last_micro_batch are read, validated and written")
{
  const Cluster cluster           = make_cluster(1, 4);
  const models::Workload workload = make_workload(3);
  const json text = {{"dp", 4}, {"micro_batch", 4}, {"grad_accum", 3}, {"last_micro_batch", {4, 2, 1, 4}},
                     {"layer_sharding", {0, 1, {{"sharded", 3}, {"slices", 4}}}}};
  const Plan plan = plan_from_json(text, "plan.json", cluster, workload);
  CHECK(plan.global_batch() == 4 * 3 * 4 - 2 - 3);
  CHECK(plan.micro_batch_samples(1, 2) == 2);
  CHECK(plan.micro_batch_samples(1, 1) == 4);
  CHECK(plan.layer_sharding[2] == LayerSharding{3, 4});
  CHECK(plan_from_json(plan_to_json(plan), "again", cluster, workload) == plan);
  CHECK_FALSE(plan_to_json(make_plan(cluster, workload, 1, 1, 4)).contains("layer_sharding"));

  auto rejected = [&](json change, const std::string& expected) {
    json bad = text;
    bad.merge_patch(change);
    CHECK_THROWS_WITH_AS(plan_from_json(bad, "plan.json", cluster, workload), doctest::Contains(expected.c_str()),
                         InputError);
  };
  rejected({{"layer_sharding", {0, 1, {{"sharded", 1}, {"slices", 3}}}}},
           "plan.json: layer_sharding[2].slices: expected 1, 2, 4 or 8, got 3");
  rejected({{"layer_sharding", {0, 1, {{"sharded", 5}, {"slices", 4}}}}}, "layer_sharding[2].sharded: expected 0 to 4");
  rejected({{"layer_sharding", {0, 1}}}, "layer_sharding: expected 3 entries");
  rejected({{"layer_sharding", {0, 2, 0}}}, "layer_sharding[1]: expected 0 (replicated) or 1 (sharded)");
  rejected({{"zero_stage", 3}}, "zero_stage: expected 0 with layer_sharding");
  rejected({{"grad_accum", {3, 3, 2, 3}}}, "grad_accum: expected the same value for every replica with sharded layers");
  rejected({{"last_micro_batch", {5, 1, 1, 1}}}, "last_micro_batch[0]: expected at most micro_batch[0] = 4, got 5");
}

TEST_CASE("lowering gathers only sharded slices, and all-sharded layers cost what ZeRO-3 costs")
{
  const Cluster cluster           = make_cluster(1, 4);
  const models::Workload workload = make_workload(3);
  const Problem problem           = make_problem(cluster, workload);
  const double layer_bytes        = 2.0 * (1 << 20);

  Plan zero0 = make_plan(cluster, workload, 1, 1, 4, 2, 2);
  Plan none  = zero0;
  none.layer_sharding.assign(3, LayerSharding{0, 1});
  CHECK(lower(none, problem).tasks.size() == lower(zero0, problem).tasks.size());
  CHECK(estimate(none, problem).iteration_time_s == estimate(zero0, problem).iteration_time_s);

  Plan zero3      = zero0;
  zero3.zero_stage = 3;
  Plan all        = zero0;
  all.layer_sharding.assign(3, LayerSharding{1, 1});
  const Schedule zero3_schedule = lower(zero3, problem);
  const Schedule all_schedule   = lower(all, problem);
  CHECK(count_tasks(all_schedule, TaskKind::all_gather) == count_tasks(zero3_schedule, TaskKind::all_gather));
  CHECK(count_tasks(all_schedule, TaskKind::reduce_scatter) == count_tasks(zero3_schedule, TaskKind::reduce_scatter));
  CHECK(count_tasks(all_schedule, TaskKind::all_reduce) == 0);
  CHECK(plan_memory(all, problem)[0].optimizer_bytes == doctest::Approx(plan_memory(zero3, problem)[0].optimizer_bytes));

  Plan mixed = zero0;
  mixed.layer_sharding = {LayerSharding{0, 1}, LayerSharding{2, 4}, LayerSharding{0, 1}};
  const Schedule schedule = lower(mixed, problem);
  CHECK(replay_problem(schedule).empty());
  // Per device: 2 micro-batches x (forward + backward) x 2 slices of a quarter layer.
  CHECK(count_tasks(schedule, TaskKind::all_gather, layer_bytes / 4) == 4 * 2 * 2 * 2);
  CHECK(count_tasks(schedule, TaskKind::reduce_scatter, layer_bytes / 4) == 4 * 2 * 2);
  CHECK(count_tasks(schedule, TaskKind::all_gather) == 4 * 2 * 2 * 2);
  // The replicated 2.5 layers' gradients are all-reduced once, in one bucket.
  CHECK(count_tasks(schedule, TaskKind::all_reduce, 2.5 * layer_bytes) == 4);
  const DeviceMemory m = plan_memory(mixed, problem)[0];
  CHECK(m.gradient_bytes == doctest::Approx(2 * (2.5 + 0.5 / 4) * (1 << 20)));
  CHECK(m.parameter_bytes == doctest::Approx(2 * (2.5 + 0.5 / 4 + 2 * 0.25) * (1 << 20)));
}

TEST_CASE("a smaller last micro-batch computes fewer samples, in lowering and in the estimate")
{
  const Cluster cluster           = make_cluster(1, 2);
  const models::Workload workload = make_workload(2);
  const Problem problem           = make_problem(cluster, workload);
  Plan plan                       = make_plan(cluster, workload, 1, 1, 2, 8, 3);
  const double full               = estimate(plan, problem).iteration_time_s;
  plan.last_micro_batch           = {8, 1};
  validate_plan(plan, cluster, workload, "plan");
  const Schedule schedule = lower(plan, problem);
  CHECK(replay_problem(schedule).empty());
  for (const Task& task : schedule.tasks)
    if (task.kind == TaskKind::forward)
      CHECK(task.samples == (task.device == 1 && task.micro_batch == 2 ? 1 : 8));
  // Device 1 has less to do, device 0 as much: the iteration is no longer, and no shorter than device 0's.
  CHECK(estimate(plan, problem).iteration_time_s == doctest::Approx(full).epsilon(1e-9));
  plan.last_micro_batch = {1, 1};
  CHECK(estimate(plan, problem).iteration_time_s < full);
}
