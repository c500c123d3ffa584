/// Expert parallelism (Plan::ep): what the lowering issues for a sparse block, over which devices, and what a
/// device holds.

#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "strategies/lowering/parameter_gather.hpp"
#include "tests/models/moe_shape.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

struct MoeCase {
  Cluster cluster           = make_cluster(2, 4, a100()); // 8 devices
  models::Workload workload = models::build_transformer(models::testing::moe_shape());
  Problem problem           = make_problem(cluster, workload);

  Plan plan(int tp, int dp, int ep, int micro_batch = 2, int zero_stage = 1) const
  {
    Plan p       = make_plan(cluster, workload, tp, 1, dp, micro_batch, 2);
    p.ep         = ep;
    p.zero_stage = zero_stage;
    return p;
  }
};

double expert_params(const models::Workload& workload)
{
  double total = 0;
  for (const auto& layer : workload.layers)
    total += layer.expert_params;
  return total;
}

} // namespace

TEST_CASE("each sparse block's dispatch and combine are all-to-alls among its expert-parallel group")
{
  const MoeCase c;
  const Plan plan         = c.plan(1, 8, 4);
  const Schedule schedule = lower(plan, c.problem);
  CHECK(replay_problem(schedule).empty());
  // 4 sparse blocks x (dispatch, combine) x (forward, backward) x 2 micro-batches on every device.
  const double bytes = 2.0 * 128 * 2 * 256 * 2; // tokens x top-2 x hidden, 16-bit, micro-batch 2
  std::set<std::vector<int>> groups;
  for (int d = 0; d < 8; ++d) {
    int exchanges = 0;
    for (int id : schedule.queues[d][static_cast<int>(Stream::expert_parallel)]) {
      const Task& task = schedule.tasks[id];
      REQUIRE(task.kind == TaskKind::all_to_all);
      const Collective& collective = schedule.collectives[task.collective];
      CHECK(collective.bytes == doctest::Approx(bytes));
      groups.insert(collective.devices);
      ++exchanges;
    }
    CHECK(exchanges == 4 * 2 * 2 * 2);
  }
  CHECK(groups == std::set<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
}

TEST_CASE("a sparse block's forward stops for its tensor-parallel collectives and all-to-alls in operator order")
{
  const MoeCase c;
  const Plan plan         = c.plan(2, 4, 2);
  const Schedule schedule = lower(plan, c.problem);
  CHECK(replay_problem(schedule).empty());
  // Device 0's forward of block 1 (layer 2), micro-batch 0, in the order its streams' tasks depend on each other:
  // attention, its all-reduce, router and dispatch, the all-to-all, the experts, their all-reduce, the combine's
  // all-to-all.
  std::vector<std::string> kinds;
  for (const Task& task : schedule.tasks)
    if (task.device == 0 && task.first_layer == 2 && task.micro_batch == 0 && !task.backward &&
        task.stream != Stream::data_parallel)
      kinds.emplace_back(task_kind_name(task.kind));
  CHECK(kinds == std::vector<std::string>{"forward", "reduce_scatter", "all_gather", "forward", "all_to_all",
                                          "forward", "reduce_scatter", "all_gather", "all_to_all"});
  // The experts' reduce-scatter carries their tokens (2 per token), the attention's the block's output.
  std::map<std::string, double> reduced;
  for (const Task& task : schedule.tasks)
    if (task.device == 0 && task.first_layer == 2 && task.micro_batch == 0 && !task.backward &&
        task.kind == TaskKind::reduce_scatter)
      reduced[schedule.task_name(task.id)] = task.bytes;
  REQUIRE(reduced.size() == 2);
  CHECK(reduced.begin()->second * 2 == doctest::Approx(reduced.rbegin()->second));
  CHECK(duplicate_task_name(schedule) == "");
}

TEST_CASE("routed experts' gradients are reduced over the replicas holding them, the rest over all")
{
  const MoeCase c;
  const Plan plan         = c.plan(1, 8, 4, 2, 0);
  const Schedule schedule = lower(plan, c.problem);
  const double experts    = expert_params(c.workload);
  const double per_param  = plan.gradient_reduction_bytes();
  double dense_bytes = 0, expert_bytes = 0;
  for (int id : schedule.queues[1][static_cast<int>(Stream::data_parallel)]) {
    const Task& task             = schedule.tasks[id];
    const Collective& collective = schedule.collectives[task.collective];
    if (task.experts) {
      CHECK(collective.devices == std::vector<int>{1, 5}); // expert rank 1 of each of the two groups
      expert_bytes += task.bytes;
    } else {
      CHECK(collective.devices.size() == 8);
      dense_bytes += task.bytes;
    }
  }
  CHECK(expert_bytes == doctest::Approx(experts / 4 * per_param));
  CHECK(dense_bytes == doctest::Approx((c.workload.total_params() - experts) * per_param));
}

TEST_CASE("a device holds only its own experts, and ZeRO shards them over their holders")
{
  const MoeCase c;
  const double experts = expert_params(c.workload);
  const auto held      = [&](int ep, int zero) { return plan_memory(c.plan(1, 8, ep, 2, zero), c.problem)[0]; };
  // 16-bit weights: three quarters of the experts leave the device with ep 4.
  CHECK(held(1, 0).parameter_bytes - held(4, 0).parameter_bytes == doctest::Approx(experts * 3 / 4 * 2));
  // ZeRO-1: dense optimizer states over 8 replicas, the experts' over the 2 that hold each.
  const double dense = c.workload.total_params() - experts;
  CHECK(held(4, 1).optimizer_bytes == doctest::Approx(12 * (dense / 8 + experts / 4 / 2)));
  // The optimizer step updates that many parameters.
  const Schedule schedule = lower(c.plan(1, 8, 4, 2, 1), c.problem);
  const Task& step        = schedule.tasks[schedule.queues[0][0].back()];
  REQUIRE(step.kind == TaskKind::optimizer);
  CHECK(step.params == doctest::Approx(dense / 8 + experts / 4 / 2));
}

TEST_CASE("expert parallelism is refused where it cannot run, with the field and the reason")
{
  const MoeCase c;
  auto refusal = [&](const Plan& plan) -> std::string {
    try {
      validate_plan(plan, c.cluster, c.workload, "plan.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal(c.plan(1, 8, 4)).empty());
  CHECK(refusal(c.plan(1, 8, 8)) == "plan.json: ep: expected a divisor of the 4 experts of model 'moe', got 8");
  CHECK(refusal(c.plan(2, 4, 4, 2, 3)).find("plan.json: zero_stage: expected 0, 1 or 2 with ep 4") == 0);
  Plan uneven           = c.plan(1, 8, 2);
  uneven.micro_batch[5] = 1;
  CHECK(refusal(uneven).find("plan.json: micro_batch[5]: expected 2 like replica 4 of its expert-parallel group") ==
        0);
  const Cluster six     = make_cluster(1, 6, a100());
  Plan odd              = make_plan(six, c.workload, 1, 1, 6);
  odd.ep                = 4;
  CHECK_THROWS_WITH_AS(validate_plan(odd, six, c.workload, "plan.json"),
                       "plan.json: ep: expected a divisor of dp (6): expert-parallel groups are made of replicas, got 4",
                       InputError);
  const models::Workload dense = make_workload(4);
  Plan on_dense                = make_plan(c.cluster, dense, 1, 1, 8);
  on_dense.ep                  = 2;
  CHECK_THROWS_WITH_AS(validate_plan(on_dense, c.cluster, dense, "plan.json"),
                       "plan.json: ep: expected 1: model 'toy' has no routed experts to divide, got 2", InputError);
}

TEST_CASE("experts' weights kept in fp8 are gathered in one byte, apart or in the dense buckets")
{
  const Cluster h100         = make_cluster(2, 4, *find_catalog_gpu("H100")); // fp8 tensor cores
  const models::Workload fp8 = models::with_fp8(MoeCase{}.workload, models::Fp8Recipe::tensorwise, "test");
  const Problem problem      = make_problem(h100, fp8);
  double params = 0, fp8_params = 0; // the whole model: one stage
  for (const auto& layer : fp8.layers) {
    params += layer.params;
    for (const auto& op : layer.operators)
      fp8_params += op.fp8 ? op.params : 0;
  }
  REQUIRE(fp8_params > 0.5 * params);
  auto plan = [&](int ep, bool kept) {
    Plan p                       = make_plan(h100, fp8, 1, 1, 8, 2, 2);
    p.ep                         = ep;
    p.zero_stage                 = 1;
    p.dtype                      = Dtype::bf16;
    p.framework.fp8              = models::Fp8Recipe::tensorwise;
    p.framework.fp8_param_gather = kept;
    return p;
  };
  // Bytes the post-step gathers of device 0 move, the dense buckets' and, with ep > 1, the experts' apart.
  auto gathered = [&](int ep, bool kept) {
    double bytes = 0;
    for (const Task& task : lower(plan(ep, kept), problem).tasks)
      if (task.kind == TaskKind::all_gather && task.stream == Stream::data_parallel && task.device == 0)
        bytes += task.bytes;
    return bytes;
  };
  // ep 1: the experts ride in the dense buckets, and the average counts them.
  CHECK(gathered(1, true) / gathered(1, false) == doctest::Approx(1 - fp8_params / params / 2));
  // ep 4: the experts' own gather moves one byte a weight.
  CHECK(gathered_expert_bytes_per_param(plan(4, true)) == 1);
  CHECK(gathered_expert_bytes_per_param(plan(4, false)) == 2);
  CHECK(gathered(4, true) < gathered(4, false));
}
