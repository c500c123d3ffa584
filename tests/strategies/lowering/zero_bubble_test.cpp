/// The zero-bubble schedule (ZB-H1): its pass order, the split backward the lowering issues, and its refusals.

#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/lowering/pass_order.hpp"
#include "strategies/plan/plan_json.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "tests/models/moe_shape.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

TEST_CASE("ZB-H1's order: 1F1B's forwards and input-gradient steps, stage s's weight gradients s steps late")
{
  const int p = 4, m = 8;
  for (int stage = 0; stage < p; ++stage) {
    CAPTURE(stage);
    const auto order = pass_order(PipelineSchedule::zero_bubble, p, stage, m);
    REQUIRE(order.size() == 3 * static_cast<std::size_t>(m));
    // Without the weight steps it is 1F1B's order.
    std::vector<costmodel::PipelineStep> rest;
    for (const auto& step : order)
      if (!step.weight)
        rest.push_back(step);
    const auto one_f_one_b = pass_order(PipelineSchedule::one_f_one_b, p, stage, m);
    REQUIRE(rest.size() == one_f_one_b.size());
    for (std::size_t i = 0; i < rest.size(); ++i) {
      CHECK(rest[i].micro_batch == one_f_one_b[i].micro_batch);
      CHECK(rest[i].backward == one_f_one_b[i].backward);
    }
    // Weight steps in micro-batch order, each after its own input-gradient step; the first after the stage's
    // (stage + 1)-th backward, then one after every backward.
    std::map<int, std::size_t> backward_at;
    int backwards = 0, weights = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i].backward && !order[i].weight) {
        backward_at[order[i].micro_batch] = i;
        ++backwards;
        continue;
      }
      if (!order[i].weight)
        continue;
      CHECK(order[i].micro_batch == weights);
      REQUIRE(backward_at.count(weights) == 1);
      CHECK(backward_at[weights] < i);
      if (backwards < m) // before the tail of weight steps that ends the iteration
        CHECK(backwards - weights == stage + 1);
      ++weights;
    }
    CHECK(weights == m);
  }
}

TEST_CASE("a zero-bubble backward is an input-gradient step, and a later weight-gradient step completes the buckets")
{
  const Cluster cluster           = make_cluster(2, 4, a100()); // 8 devices
  const models::Workload workload = models::build_transformer([] {
    models::TransformerShape s = models::testing::moe_shape();
    s.experts = s.experts_per_token = s.expert_intermediate = 0;
    return s;
  }());
  const Problem problem = make_problem(cluster, workload);
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const Plan plan = plan_from_json({{"tp", tp}, {"pp", 2}, {"dp", 4 / tp}, {"micro_batch", 2}, {"grad_accum", 4},
                                      {"schedule", "zero_bubble"}, {"zero_stage", 1}},
                                     "zb.json", cluster, workload);
    const Schedule schedule = lower(plan, problem);
    CHECK(replay_problem(schedule).empty());
    double input_flops = 0, weight_flops = 0, forward_flops = 0;
    int weight_steps = 0;
    for (int id : schedule.queues[0][static_cast<int>(Stream::compute)]) {
      const Task& task = schedule.tasks[id];
      if (task.kind == TaskKind::forward)
        forward_flops += task.flops;
      if (task.kind != TaskKind::backward)
        continue;
      CHECK(task.part != BackwardPart::whole);
      (task.part == BackwardPart::weight_gradients ? weight_flops : input_flops) += task.flops;
      weight_steps += task.part == BackwardPart::weight_gradients ? 1 : 0;
    }
    // Together the full backward, twice the forward; the weight half is the linear operators' products.
    CHECK(input_flops + weight_flops == doctest::Approx(2 * forward_flops));
    CHECK(weight_flops > 0.4 * forward_flops);
    CHECK(weight_steps >= 4); // one per micro-batch, the last split where buckets close
    // Every gradient bucket waits for a weight-gradient step.
    for (int id : schedule.queues[0][static_cast<int>(Stream::data_parallel)]) {
      const Task& bucket = schedule.tasks[id];
      if (bucket.kind == TaskKind::all_gather)
        continue;
      REQUIRE(bucket.deps.size() == 1);
      CHECK(schedule.tasks[bucket.deps[0]].part == BackwardPart::weight_gradients);
    }
    CHECK(duplicate_task_name(schedule) == "");
  }

  // Memory: every stage holds pp micro-batches (stage s runs its weight gradients s steps late).
  const auto memory = [&](const char* schedule_name) {
    return plan_memory(plan_from_json({{"tp", 1}, {"pp", 2}, {"dp", 4}, {"micro_batch", 2}, {"grad_accum", 4},
                                       {"schedule", schedule_name}},
                                      "zb.json", cluster, workload),
                       problem);
  };
  const auto zb = memory("zero_bubble"), one_f_one_b = memory("1f1b");
  CHECK(zb[0].activation_bytes == doctest::Approx(one_f_one_b[0].activation_bytes)); // stage 0: pp - 0 in flight
  CHECK(one_f_one_b[4].activation_bytes < zb[4].activation_bytes);                  // stage 1: 1 against 2
}

TEST_CASE("with expert parallelism every routed experts' bucket is still reduced after a weight-gradient step")
{
  const Cluster cluster           = make_cluster(2, 4, a100());
  const models::Workload workload = models::build_transformer(models::testing::moe_shape());
  const Problem problem           = make_problem(cluster, workload);
  // 1 MiB buckets: a block's experts (3 MiB of gradients per expert rank) close buckets at layers where its
  // dense part (a fifth of that) does not.
  auto reductions                 = [&](const char* schedule_name) {
    const Plan plan = plan_from_json({{"pp", 2}, {"dp", 4}, {"ep", 2}, {"micro_batch", 1}, {"grad_accum", 4},
                                      {"schedule", schedule_name}, {"zero_stage", 1}, {"bucket_mib", 1}},
                                     "zb.json", cluster, workload);
    const Schedule schedule = lower(plan, problem);
    CHECK(replay_problem(schedule).empty());
    std::map<bool, double> bytes; // experts or not -> bytes reduced by device 0
    for (int id : schedule.queues[0][static_cast<int>(Stream::data_parallel)])
      if (schedule.tasks[id].kind == TaskKind::reduce_scatter)
        bytes[schedule.tasks[id].experts] += schedule.tasks[id].bytes;
    return bytes;
  };
  const auto zb = reductions("zero_bubble"), one_f_one_b = reductions("1f1b");
  CHECK(zb.at(true) == doctest::Approx(one_f_one_b.at(true)));
  CHECK(zb.at(false) == doctest::Approx(one_f_one_b.at(false)));
}

TEST_CASE("the zero-bubble schedule is refused with what it does not model, naming the field")
{
  const Cluster cluster           = make_cluster(2, 4, a100());
  const models::Workload workload = make_workload(8);
  auto refusal                    = [&](nlohmann::json extra = nlohmann::json::object()) -> std::string {
    nlohmann::json json = {{"pp", 2}, {"dp", 4}, {"micro_batch", 1}, {"grad_accum", 4}, {"schedule", "zero_bubble"}};
    json.update(extra);
    try {
      plan_from_json(json, "zb.json", cluster, workload);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal().empty());
  CHECK(refusal({{"virtual_stages", 2}}) ==
        "zb.json: schedule: expected \"1f1b\" with virtual_stages 2 (interleaved 1F1B), got \"zero_bubble\"");
  CHECK(refusal({{"recompute", true}}).find("zb.json: recompute: expected none or \"selective\"") == 0);
  CHECK(refusal({{"zero_stage", 2}}).find("zb.json: zero_stage: expected ZeRO 0 or 1") == 0);
  CHECK(refusal({{"schedule", "zb"}}) == "zb.json: schedule: expected \"gpipe\", \"1f1b\" or \"zero_bubble\", got string \"zb\"");
}
