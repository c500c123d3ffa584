/// Context parallelism (Plan::cp): plan files, the ring of keys and values the lowering issues beside each
/// attention, what a rank computes and holds, and where cp is refused.

#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/plan_json.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "tests/models/moe_shape.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// The tests' small Llama-style model without experts: 4 blocks, hidden 256, 8 heads over 2 key-value heads,
/// flash attention, sequence 128.
models::TransformerShape dense_shape()
{
  models::TransformerShape s = models::testing::moe_shape();
  s.name                     = "dense";
  s.experts                  = 0;
  s.experts_per_token        = 0;
  s.expert_intermediate      = 0;
  return s;
}

struct ContextCase {
  Cluster cluster           = make_cluster(2, 4, a100()); // 8 devices
  models::Workload workload = models::build_transformer(dense_shape());
  Problem problem           = make_problem(cluster, workload);

  /// tp x cp x dp = 8 from a plan file's fields.
  Plan plan(int tp, int cp, int micro_batch = 2, nlohmann::json extra = nlohmann::json::object()) const
  {
    nlohmann::json json = {{"tp", tp}, {"cp", cp}, {"dp", 8 / tp / cp}, {"micro_batch", micro_batch},
                           {"grad_accum", 2}, {"zero_stage", 1}};
    json.update(extra);
    return plan_from_json(json, "plan.json", cluster, workload);
  }
};

std::string refusal(const nlohmann::json& json, const Cluster& cluster, const models::Workload& workload)
{
  try {
    plan_from_json(json, "plan.json", cluster, workload);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// Sum of the compute tasks' FLOPs on `device`.
double device_flops(const Schedule& schedule, int device)
{
  double flops = 0;
  for (int id : schedule.queues[device][static_cast<int>(Stream::compute)])
    flops += schedule.tasks[id].flops;
  return flops;
}

} // namespace

TEST_CASE("a plan file's dp counts replicas; cp consecutive data-parallel ranks share each one's sequences")
{
  const ContextCase c;
  const Plan plan = c.plan(2, 2);
  CHECK(plan.cp == 2);
  CHECK(plan.dp == 4); // data-parallel ranks: 2 replicas x cp 2
  CHECK(plan.replicas() == 2);
  CHECK(plan.global_batch() == 2 * 2 * 2); // replicas x micro-batch x accumulation
  // Megatron's tp-cp-dp-pp order: ranks 0-1 are TP ranks of replica 0's first context rank, 2-3 its second.
  CHECK(plan.context_group_first(3) == 2);
  const nlohmann::json written = plan_to_json(plan);
  CHECK(written["dp"] == 2);
  CHECK(written["cp"] == 2);
  CHECK(plan_from_json(written, "again.json", c.cluster, c.workload) == plan);
  CHECK(!plan_to_json(c.plan(2, 1)).contains("cp"));
}

TEST_CASE("every attention's keys and values go round its context-parallel group beside the attention kernel")
{
  const ContextCase c;
  const Plan plan         = c.plan(2, 2);
  const Schedule schedule = lower(plan, c.problem);
  CHECK(replay_problem(schedule).empty());
  const models::TransformerShape shape = dense_shape();
  // Whole-sequence K and V of the device's heads: 2 tensors x 128 tokens x 2 key-value heads x 32 wide, 16-bit,
  // over tp 2, for a micro-batch of 2.
  const double bytes = 2.0 * 128 * (2 * 2 * 32) * 2 / 2;
  std::set<std::vector<int>> groups;
  int gathers = 0, scatters = 0;
  for (int id : schedule.queues[0][static_cast<int>(Stream::context_parallel)]) {
    const Task& task             = schedule.tasks[id];
    const Collective& collective = schedule.collectives[task.collective];
    CHECK(collective.bytes == doctest::Approx(bytes));
    groups.insert(collective.devices);
    (task.kind == TaskKind::all_gather ? gathers : scatters) += 1;
  }
  // 4 blocks x 2 micro-batches: a gather forward, a gather and a gradient reduce-scatter backward.
  CHECK(gathers == shape.layers * 2 * 2);
  CHECK(scatters == shape.layers * 2);
  CHECK(groups == std::set<std::vector<int>>{{0, 2}}); // device 0's TP rank 0 with the next context rank's

  // The attention runs while its ring goes round; the output projection waits for the ring.
  const Task* attention = nullptr;
  const Task* gather    = nullptr;
  for (const Task& task : schedule.tasks)
    if (task.device == 0 && task.first_layer == 1 && task.micro_batch == 0 && !task.backward) {
      if (task.kind == TaskKind::all_gather && task.stream == Stream::context_parallel)
        gather = &task;
      else if (task.kind == TaskKind::forward && task.piece == 1)
        attention = &task;
    }
  REQUIRE(attention != nullptr);
  REQUIRE(gather != nullptr);
  CHECK(std::find(attention->deps.begin(), attention->deps.end(), gather->id) == attention->deps.end());
  const Task& projection = schedule.tasks[attention->id + 1];
  REQUIRE(projection.kind == TaskKind::forward);
  CHECK(std::find(projection.deps.begin(), projection.deps.end(), gather->id) != projection.deps.end());
  // A piece runs its operators' share of the layer: the attention kernel's FLOPs over the block's.
  const models::Layer& block = c.workload.layers[1];
  double attention_flops     = 0;
  for (const auto& op : block.operators)
    if (op.kind == models::OperatorKind::fused_attention)
      attention_flops += op.flops_per_sample();
  CHECK(attention->share == doctest::Approx(attention_flops / block.forward_flops_per_sample));

  CHECK(duplicate_task_name(schedule) == "");
}

TEST_CASE("without tensor parallelism the ring still ends at the attention: the rest of the layer waits for it")
{
  const ContextCase c;
  const Plan plan         = c.plan(1, 2);
  const Schedule schedule = lower(plan, c.problem);
  CHECK(replay_problem(schedule).empty());
  // Block 0's forward on device 0: before the attention, the attention beside its ring, the rest of the block.
  std::vector<const Task*> pieces;
  const Task* ring = nullptr;
  for (const Task& task : schedule.tasks)
    if (task.device == 0 && task.first_layer == 1 && task.micro_batch == 0 && !task.backward) {
      if (task.kind == TaskKind::forward)
        pieces.push_back(&task);
      else if (task.stream == Stream::context_parallel)
        ring = &task;
    }
  REQUIRE(pieces.size() == 3);
  REQUIRE(ring != nullptr);
  CHECK(std::find(pieces[2]->deps.begin(), pieces[2]->deps.end(), ring->id) != pieces[2]->deps.end());
  CHECK(pieces[0]->share + pieces[1]->share + pieces[2]->share == doctest::Approx(1));
  CHECK(pieces[1]->share < 0.5); // the attention kernel alone, at 128 tokens a small part of the block
}

TEST_CASE("a context-parallel rank computes, sends and keeps 1/cp of what a replica of its own would")
{
  const ContextCase c;
  // The same micro-batches on the same 8 devices: 4 replicas of tp 2, or 2 replicas cut over cp 2.
  const Plan whole   = c.plan(2, 1);
  const Plan halves  = c.plan(2, 2);
  const double flops = device_flops(lower(whole, c.problem), 0);
  CHECK(device_flops(lower(halves, c.problem), 0) == doctest::Approx(flops / 2));
  const DeviceMemory a = plan_memory(whole, c.problem)[0];
  const DeviceMemory b = plan_memory(halves, c.problem)[0];
  CHECK(b.activation_bytes == doctest::Approx(a.activation_bytes / 2));
  // Model states: the same ZeRO-1 shards over the same 4 data-parallel ranks.
  CHECK(b.optimizer_bytes == doctest::Approx(a.optimizer_bytes));

  // Across a pipeline boundary a rank sends its part of the sequence.
  const Cluster cluster = c.cluster;
  Plan piped            = c.plan(1, 2, 2, {{"pp", 2}, {"dp", 2}});
  Plan plain            = c.plan(1, 1, 2, {{"pp", 2}, {"dp", 4}});
  auto sent             = [&](const Plan& plan) {
    for (const Task& task : lower(plan, c.problem).tasks)
      if (task.kind == TaskKind::send)
        return task.bytes;
    return 0.0;
  };
  CHECK(sent(piped) == doctest::Approx(sent(plain) / 2));
}

TEST_CASE("context parallelism is refused where it cannot run, with the field and the reason")
{
  const ContextCase c;
  const nlohmann::json base = {{"tp", 2}, {"cp", 2}, {"dp", 2}, {"micro_batch", 1}};
  CHECK(refusal(base, c.cluster, c.workload).empty());
  auto with = [&](nlohmann::json extra) {
    nlohmann::json json = base;
    json.update(extra);
    return json;
  };
  CHECK(refusal(with({{"dp", 1}}), c.cluster, c.workload) ==
        "plan.json: (top level): expected tp * cp * pp * dp to equal the 8 devices of cluster 'test', got 2 * 2 * 1 * "
        "1 = 4");
  CHECK(refusal(with({{"framework", "deepspeed"}}), c.cluster, c.workload)
            .find("plan.json: cp: expected 1 with framework \"deepspeed\"") == 0);

  models::TransformerShape no_flash = dense_shape();
  no_flash.flash_attention          = false;
  const models::Workload unfused    = models::build_transformer(no_flash);
  CHECK(refusal(base, c.cluster, unfused).find("plan.json: cp: expected 1 without flash attention") == 0);

  models::TransformerShape odd = dense_shape();
  odd.seq_len                  = 100; // not 2 x cp x tp = 8 equal chunks
  CHECK(refusal(base, c.cluster, models::build_transformer(odd)) ==
        "plan.json: cp: expected the sequence of 100 tokens to split into 2 x cp x tp = 8 equal chunks (Megatron-LM's "
        "load-balanced causal split), got cp 2");

  const models::Workload moe = models::build_transformer(models::testing::moe_shape());
  CHECK(refusal(with({{"tp", 1}, {"dp", 4}, {"ep", 2}}), c.cluster, moe)
            .find("plan.json: ep: expected 1 with cp 2 (context parallelism)") == 0);

  const nlohmann::json per_device = {{"tp", 2}, {"cp", 2}, {"dp", 2},
                                     {"micro_batch_per_device", {1, 1, 2, 2, 1, 1, 1, 1}}};
  CHECK(refusal(per_device, c.cluster, c.workload)
            .find("plan.json: micro_batch_per_device: expected 1 on every device of replica 0 with cp 2") == 0);
  CHECK(refusal(base, c.cluster, make_workload(4)).find("plan.json: cp: expected 1: model 'toy' is a layer list") ==
        0);
}
