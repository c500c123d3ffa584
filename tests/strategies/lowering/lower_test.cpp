#include "strategies/lowering/lower.hpp"

#include "core/error.hpp"
#include "core/software_release.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

int count(const Schedule& schedule, const std::function<bool(const Task&)>& predicate)
{
  return static_cast<int>(std::count_if(schedule.tasks.begin(), schedule.tasks.end(), predicate));
}

int count_kind(const Schedule& schedule, TaskKind kind, Stream stream)
{
  return count(schedule, [&](const Task& t) { return t.kind == kind && t.stream == stream; });
}

int count_collectives(const Schedule& schedule, TaskKind kind, Stream stream)
{
  int n = 0;
  for (const auto& c : schedule.collectives)
    n += c.kind == kind && schedule.tasks[c.tasks.front()].stream == stream;
  return n;
}

/// "F0 F1 B0 ..." for the compute tasks of one device (pieces of one micro-batch collapse into one entry).
std::string compute_order(const Schedule& schedule, int device)
{
  std::string order;
  int last_mb = -1;
  TaskKind last_kind = TaskKind::optimizer;
  for (int id : schedule.queues[device][static_cast<int>(Stream::compute)]) {
    const Task& t = schedule.tasks[id];
    if (t.kind == TaskKind::optimizer) {
      order += " O";
      continue;
    }
    if (t.micro_batch == last_mb && t.kind == last_kind)
      continue;
    last_mb   = t.micro_batch;
    last_kind = t.kind;
    order += (order.empty() ? "" : " ") + std::string(t.kind == TaskKind::forward ? "F" : "B") +
             std::to_string(t.micro_batch);
  }
  return order;
}

struct Case {
  Cluster cluster;
  models::Workload workload;
  Plan plan;

  Case(int nodes, int per_node, int layers, int tp, int pp, int dp, int micro_batch, int grad_accum)
      : cluster(make_cluster(nodes, per_node)), workload(make_workload(layers)),
        plan(make_plan(cluster, workload, tp, pp, dp, micro_batch, grad_accum))
  {
  }

  Schedule lower() const { return strategies::lower(plan, make_problem(cluster, workload)); }
};

void check_same(const Schedule& a, const Schedule& b)
{
  REQUIRE(a.tasks.size() == b.tasks.size());
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    const Task& x = a.tasks[i];
    const Task& y = b.tasks[i];
    const bool same = x.id == y.id && x.kind == y.kind && x.stream == y.stream && x.device == y.device &&
                      x.stage == y.stage && x.replica == y.replica && x.tp_rank == y.tp_rank &&
                      x.micro_batch == y.micro_batch && x.first_layer == y.first_layer &&
                      x.layer_count == y.layer_count && x.piece == y.piece && x.samples == y.samples &&
                      x.flops == y.flops && x.params == y.params && x.bytes == y.bytes && x.peer == y.peer &&
                      x.match == y.match && x.collective == y.collective && x.backward == y.backward &&
                      x.deps == y.deps;
    if (!same)
      FAIL("task " << i << " differs: " << a.task_name(static_cast<int>(i)));
  }
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    CHECK(a.collectives[i].devices == b.collectives[i].devices);
    CHECK(a.collectives[i].tasks == b.collectives[i].tasks);
    CHECK(a.collectives[i].bytes == b.collectives[i].bytes);
  }
  CHECK(a.queues == b.queues);
}

} // namespace

TEST_CASE("pp=2 dp=2 lowers to the expected tasks with GPipe and 1F1B")
{
  for (auto kind : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    CAPTURE(schedule_name(kind));
    Case c(1, 4, 4, 1, 2, 2, 2, 4);
    c.plan.schedule        = kind;
    c.plan.bucket_bytes    = 1 << 30; // one bucket per stage
    const Schedule schedule = c.lower();
    CHECK(replay_problem(schedule) == "");
    CHECK(schedule.device_count == 4);
    CHECK(count_kind(schedule, TaskKind::forward, Stream::compute) == 16);  // 4 devices x 4 micro-batches
    CHECK(count_kind(schedule, TaskKind::backward, Stream::compute) == 16);
    CHECK(count_kind(schedule, TaskKind::send, Stream::pipeline) == 16);    // 2 replicas x 4 mb x 2 directions
    CHECK(count_kind(schedule, TaskKind::recv, Stream::pipeline) == 16);
    CHECK(count_kind(schedule, TaskKind::optimizer, Stream::compute) == 4);
    CHECK(count_kind(schedule, TaskKind::all_reduce, Stream::data_parallel) == 4);
    CHECK(count_kind(schedule, TaskKind::all_reduce, Stream::tensor_parallel) == 0);
    CHECK(schedule.collectives.size() == 2); // one bucket per (stage, tp rank) group
    CHECK(schedule.tasks.size() == 16 + 16 + 16 + 16 + 4 + 4);

    // Activations: 1 MiB per sample at the boundary, micro-batch 2.
    for (const Task& t : schedule.tasks)
      if (t.kind == TaskKind::send || t.kind == TaskKind::recv)
        CHECK(t.bytes == 2 * units::kMiB);
    // Gradient all-reduce: 2 layers of 2^20 parameters in 16 bits, between the two replicas of a stage.
    for (const Collective& collective : schedule.collectives) {
      CHECK(collective.bytes == 2 * 2.0 * (1 << 20));
      CHECK(collective.devices.size() == 2);
      CHECK(collective.algorithm == static_cast<int>(CollectiveAlgorithm::ring));
    }
    CHECK(schedule.collectives[0].devices == std::vector<int>{0, 1});
    CHECK(schedule.collectives[1].devices == std::vector<int>{2, 3});
  }
}

TEST_CASE("1F1B warms up pp - stage - 1 forwards, alternates, then cools down")
{
  Case c(1, 4, 4, 1, 4, 1, 1, 6);
  const Schedule schedule = c.lower();
  CHECK(replay_problem(schedule) == "");
  CHECK(compute_order(schedule, 0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 O");
  CHECK(compute_order(schedule, 1) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 O");
  CHECK(compute_order(schedule, 2) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 O");
  CHECK(compute_order(schedule, 3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 O");

  // Fewer micro-batches than stages: the warm-up is cut short.
  Case short_case(1, 4, 4, 1, 4, 1, 1, 2);
  const Schedule short_schedule = short_case.lower();
  CHECK(replay_problem(short_schedule) == "");
  CHECK(compute_order(short_schedule, 0) == "F0 F1 B0 B1 O");
  CHECK(compute_order(short_schedule, 3) == "F0 B0 F1 B1 O");
}

TEST_CASE("GPipe runs every forward, then the backwards in reverse")
{
  Case c(1, 2, 4, 1, 2, 1, 1, 4);
  c.plan.schedule = PipelineSchedule::gpipe;
  const Schedule schedule = c.lower();
  CHECK(replay_problem(schedule) == "");
  CHECK(compute_order(schedule, 0) == "F0 F1 F2 F3 B3 B2 B1 B0 O");
  CHECK(compute_order(schedule, 1) == "F0 F1 F2 F3 B3 B2 B1 B0 O");
}

TEST_CASE("send and recv pair up and feed the consumer")
{
  Case c(1, 2, 4, 1, 2, 1, 3, 2);
  c.plan.dtype = Dtype::fp32;
  const Schedule schedule = c.lower();
  CHECK(replay_problem(schedule) == "");
  for (const Task& t : schedule.tasks) {
    if (t.kind == TaskKind::send) {
      CHECK(t.bytes == 3 * 2 * units::kMiB); // fp32 doubles the 16-bit figure
      REQUIRE(t.deps.size() == 1);
      const Task& producer = schedule.tasks[t.deps[0]];
      CHECK(producer.kind == (t.backward ? TaskKind::backward : TaskKind::forward));
      CHECK(producer.micro_batch == t.micro_batch);
    }
    if (t.kind == TaskKind::forward && t.stage == 1) {
      REQUIRE(t.deps.size() == 1);
      CHECK(schedule.tasks[t.deps[0]].kind == TaskKind::recv);
      CHECK(schedule.tasks[t.deps[0]].micro_batch == t.micro_batch);
      CHECK(schedule.tasks[t.deps[0]].peer == 0);
    }
    if (t.kind == TaskKind::backward && t.stage == 0) {
      REQUIRE(t.deps.size() == 1);
      CHECK(schedule.task_name(t.deps[0]) == "recv-grad s0 r0 t0 mb" + std::to_string(t.micro_batch));
    }
  }
}

TEST_CASE("ZeRO stages emit their collectives")
{
  // 4 replicas, one stage, 4 layers of 2^20 parameters: 2 MiB of 16-bit gradients each, 8 MiB in all,
  // in buckets of 3 MiB: 3 + 3 + 2 MiB.
  auto lower_zero = [](int zero_stage) {
    Case c(1, 4, 4, 1, 1, 4, 1, 3);
    c.plan.zero_stage   = zero_stage;
    c.plan.bucket_bytes = 3 * units::kMiB;
    Schedule schedule   = c.lower();
    CHECK(replay_problem(schedule) == "");
    return schedule;
  };
  const Stream dp = Stream::data_parallel;

  SUBCASE("0: all-reduce of each bucket during the last backward")
  {
    const Schedule s = lower_zero(0);
    CHECK(count_kind(s, TaskKind::all_reduce, dp) == 3 * 4);
    CHECK(count_collectives(s, TaskKind::all_reduce, dp) == 3);
    CHECK(count_kind(s, TaskKind::reduce_scatter, dp) == 0);
    CHECK(count_kind(s, TaskKind::all_gather, dp) == 0);
    std::vector<double> bytes;
    for (int id : s.queues[0][static_cast<int>(dp)])
      bytes.push_back(s.tasks[id].bytes);
    CHECK(bytes == std::vector<double>{3 * units::kMiB, 3 * units::kMiB, 2 * units::kMiB});
    CHECK(s.task_name(s.queues[1][static_cast<int>(dp)][2]) == "ar-grad s0 r1 t0 b2");
    // The first bucket is ready before the backward ends: it depends on a piece that other pieces follow.
    const Task& first = s.tasks[s.queues[0][static_cast<int>(dp)][0]];
    REQUIRE(first.deps.size() == 1);
    const Task& producer = s.tasks[first.deps[0]];
    CHECK(producer.kind == TaskKind::backward);
    CHECK(producer.micro_batch == 2);
    CHECK(producer.first_layer == 2);
    CHECK(producer.layer_count == 2);
    CHECK(s.task_name(producer.id) == "bwd s0 r0 t0 mb2 l2-3");
    // Earlier micro-batches run their backward in one task.
    CHECK(count(s, [](const Task& t) { return t.kind == TaskKind::backward && t.device == 0; }) == 2 + 3);
    const Task& optimizer = s.tasks[s.queues[0][0].back()];
    CHECK(optimizer.kind == TaskKind::optimizer);
    CHECK(optimizer.deps.size() == 3);
    CHECK(optimizer.params == 4.0 * (1 << 20));
  }
  SUBCASE("1: reduce-scatter of the buckets, all-gather after the optimizer")
  {
    const Schedule s = lower_zero(1);
    CHECK(count_kind(s, TaskKind::all_reduce, dp) == 0);
    CHECK(count_kind(s, TaskKind::reduce_scatter, dp) == 3 * 4);
    CHECK(count_kind(s, TaskKind::all_gather, dp) == 3 * 4);
    CHECK(s.collectives.size() == 6);
    const Task& optimizer = s.tasks[s.queues[0][0].back()];
    CHECK(optimizer.deps.size() == 3);
    CHECK(optimizer.params == 1.0 * (1 << 20));
    for (const Task& t : s.tasks)
      if (t.kind == TaskKind::all_gather) {
        REQUIRE(t.deps.size() == 1);
        CHECK(s.tasks[t.deps[0]].kind == TaskKind::optimizer);
        CHECK(s.tasks[t.deps[0]].device == t.device);
      }
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][3]) == "ag-param s0 r0 t0 b0");
  }
  SUBCASE("2: reduce-scatter of the buckets during every backward")
  {
    const Schedule s = lower_zero(2);
    CHECK(count_kind(s, TaskKind::reduce_scatter, dp) == 3 * 3 * 4);
    CHECK(count_kind(s, TaskKind::all_gather, dp) == 3 * 4);
    CHECK(count_kind(s, TaskKind::all_reduce, dp) == 0);
    CHECK(s.tasks[s.queues[0][0].back()].deps.size() == 9);
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][4]) == "rs-grad s0 r0 t0 mb1 b1");
  }
  SUBCASE("3: per-layer gathers before forward and backward, reduce-scatter after backward")
  {
    const Schedule s = lower_zero(3);
    CHECK(count_kind(s, TaskKind::all_gather, dp) == 4 * 2 * 3 * 4);
    CHECK(count_kind(s, TaskKind::reduce_scatter, dp) == 4 * 3 * 4);
    CHECK(count_kind(s, TaskKind::all_reduce, dp) == 0);
    CHECK(s.tasks[s.queues[0][0].back()].deps.size() == 12);
    for (const Task& t : s.tasks) {
      if (t.kind == TaskKind::all_gather) {
        // Prefetching one layer ahead: a forward gather waits for the compute two layers back.
        if (!t.backward && t.first_layer >= 2) {
          REQUIRE(t.deps.size() == 1);
          const Task& before = s.tasks[t.deps[0]];
          CHECK(before.kind == TaskKind::forward);
          CHECK(before.first_layer == t.first_layer - 2);
          CHECK(before.micro_batch == t.micro_batch);
        } else {
          CHECK(t.deps.empty());
        }
        CHECK(t.bytes == 2.0 * (1 << 20));
      }
      if ((t.kind == TaskKind::forward || t.kind == TaskKind::backward)) {
        REQUIRE(t.deps.size() == 1);
        const Task& gather = s.tasks[t.deps[0]];
        CHECK(gather.kind == TaskKind::all_gather);
        CHECK(gather.first_layer == t.first_layer);
        CHECK(gather.backward == t.backward);
      }
    }
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][0]) == "ag-fwd s0 r0 t0 mb0 l0");
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][4]) == "ag-bwd s0 r0 t0 mb0 l3");
    // The next layer's gather is issued before this layer's reduce-scatter.
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][5]) == "ag-bwd s0 r0 t0 mb0 l2");
    CHECK(s.task_name(s.queues[0][static_cast<int>(dp)][6]) == "rs-grad s0 r0 t0 mb0 l3");
  }
}

TEST_CASE("tensor parallelism: 2 all-reduces forward and 2 backward per transformer layer and micro-batch")
{
  Case c(1, 8, 4, 2, 2, 2, 2, 3);
  c.plan.sequence_parallel = false;
  c.workload.layers[0].kind                        = "embedding";
  c.workload.layers[0].tensor_parallel_all_reduces = 1;
  c.workload.layers[3].tensor_parallel_all_reduces = 0;
  const Schedule s = c.lower();
  CHECK(replay_problem(s) == "");
  const Stream tp = Stream::tensor_parallel;
  // Per replica and TP rank, over both stages: 3 micro-batches x 2 directions x (1 + 2 + 2 + 0) all-reduces.
  const int per_replica_and_rank = 3 * 2 * (1 + 2 + 2 + 0);
  CHECK(count_kind(s, TaskKind::all_reduce, tp) == per_replica_and_rank * 2 * 2);
  CHECK(count_collectives(s, TaskKind::all_reduce, tp) == per_replica_and_rank * 2);
  CHECK(count(s, [](const Task& t) { return t.stream == tp && t.first_layer == 1 && !t.backward; }) ==
        2 * 3 * 2 * 2);
  // Compute pieces: one per all-reduce, and one for the unsplit layer; flops divided by tp and pieces.
  CHECK(count_kind(s, TaskKind::forward, Stream::compute) == 3 * 8 * 3);
  for (const Task& t : s.tasks) {
    if (t.kind == TaskKind::forward)
      CHECK(t.flops == doctest::Approx(1e9 / 2 / (t.first_layer == 0 || t.first_layer == 3 ? 1 : 2) * 2));
    if (t.kind == TaskKind::all_reduce && t.stream == tp)
      CHECK(t.bytes == 2 * units::kMiB);
  }
  for (const Collective& collective : s.collectives) {
    REQUIRE(collective.devices.size() == 2);
    if (s.tasks[collective.tasks[0]].stream != tp)
      continue;
    CHECK(s.tasks[collective.tasks[0]].tp_rank == 0);
    CHECK(s.tasks[collective.tasks[1]].tp_rank == 1);
    CHECK(collective.devices[1] == collective.devices[0] + 1);
  }
  // The all-reduce follows its piece and the next piece waits for it.
  const auto& queue = s.queues[0][static_cast<int>(Stream::compute)];
  const Task& second = s.tasks[queue[1]];
  REQUIRE(second.deps.size() == 1);
  CHECK(s.tasks[second.deps[0]].kind == TaskKind::all_reduce);
  CHECK(s.tasks[s.tasks[second.deps[0]].deps[0]].id == queue[0]);
  CHECK(s.task_name(queue[0]) == "fwd s0 r0 t0 mb0 l0.0");
  CHECK(s.task_name(queue[2]) == "fwd s0 r0 t0 mb0 l1.1");
  CHECK(s.task_name(second.deps[0]) == "ar-tp-fwd s0 r0 t0 mb0 l0.0");
}

TEST_CASE("sequence parallelism: each tensor-parallel all-reduce becomes a reduce-scatter and an all-gather")
{
  Case c(1, 8, 4, 2, 2, 2, 2, 3);
  Case plain(1, 8, 4, 2, 2, 2, 2, 3);
  c.plan.sequence_parallel     = true;
  plain.plan.sequence_parallel = false;
  const Schedule s = c.lower(), reduced = plain.lower();
  CHECK(replay_problem(s) == "");
  const Stream tp = Stream::tensor_parallel;
  const int all_reduces = count_kind(reduced, TaskKind::all_reduce, tp);
  CHECK(count_kind(s, TaskKind::all_reduce, tp) == 0);
  CHECK(count_kind(s, TaskKind::reduce_scatter, tp) == all_reduces);
  CHECK(count_kind(s, TaskKind::all_gather, tp) == all_reduces);
  // Same buffers, in that order: the next piece waits for the all-gather, which waits for the reduce-scatter.
  const auto& queue  = s.queues[0][static_cast<int>(Stream::compute)];
  const Task& second = s.tasks[queue[1]];
  REQUIRE(second.deps.size() == 1);
  const Task& gather  = s.tasks[second.deps[0]];
  const Task& scatter = s.tasks[gather.deps[0]];
  CHECK(s.task_name(gather.id) == "ag-tp-fwd s0 r0 t0 mb0 l0.0");
  CHECK(s.task_name(scatter.id) == "rs-tp-fwd s0 r0 t0 mb0 l0.0");
  CHECK(scatter.deps == std::vector<int>{queue[0]});
  CHECK(gather.bytes == scatter.bytes);
  CHECK(s.sequence_parallel);
  CHECK_FALSE(reduced.sequence_parallel);
}

TEST_CASE("tensor parallelism with recompute: the recomputed forward all-reduces too, 6 per block as in Megatron-LM")
{
  Case c(1, 8, 4, 2, 2, 2, 2, 3);
  c.plan.recompute         = true;
  c.plan.sequence_parallel = false;
  const Schedule s = c.lower();
  CHECK(replay_problem(s) == "");
  const Stream tp = Stream::tensor_parallel;
  // Per replica and TP rank, over both stages: 3 micro-batches x 4 layers x (2 forward + 2 recomputed + 2 backward).
  const int per_replica_and_rank = 3 * 4 * 6;
  CHECK(count_kind(s, TaskKind::all_reduce, tp) == per_replica_and_rank * 2 * 2);
  for (const models::Layer& layer : c.workload.layers)
    CHECK(tensor_parallel_all_reduces(layer, c.plan) == 6);
  // A backward runs the forward's two pieces again, then its own two; together the layer's forward + backward.
  double backward_flops = 0;
  for (int id : s.queues[0][static_cast<int>(Stream::compute)]) {
    const Task& t = s.tasks[id];
    if (t.kind != TaskKind::backward || t.micro_batch != 0 || t.first_layer != 1)
      continue;
    CHECK(t.flops == doctest::Approx((t.piece < 2 ? 1e9 : 2e9) / 2 / 2 * 2));
    backward_flops += t.flops;
  }
  CHECK(backward_flops == doctest::Approx((1e9 + 2e9) / 2 * 2));
  c.plan.tp = 1;
  CHECK(tensor_parallel_all_reduces(c.workload.layers[0], c.plan) == 0);
}

TEST_CASE("dp=1 and tp=1 emit no collectives")
{
  for (int zero = 0; zero <= 3; ++zero) {
    Case c(1, 2, 4, 1, 2, 1, 1, 4);
    c.plan.zero_stage       = zero;
    const Schedule schedule = c.lower();
    CHECK(schedule.collectives.empty());
    CHECK(count(schedule, [](const Task& t) { return is_collective(t.kind); }) == 0);
    CHECK(replay_problem(schedule) == "");
  }
}

TEST_CASE("recompute adds a forward to the backward")
{
  Case c(1, 2, 4, 1, 2, 1, 2, 2);
  c.plan.recompute = true;
  const Schedule s = c.lower();
  for (const Task& t : s.tasks)
    if (t.kind == TaskKind::backward)
      CHECK(t.flops == doctest::Approx(2 * 2 * (2e9 + 1e9)));
}

TEST_CASE("heterogeneous micro-batches and grad_accum meet at the gradient all-reduce")
{
  Case c(1, 4, 4, 1, 2, 2, 1, 1);
  c.plan.micro_batch = {2, 4};
  c.plan.grad_accum  = {4, 2};
  for (int zero : {0, 1}) {
    c.plan.zero_stage = zero;
    const Schedule s  = c.lower();
    CHECK(replay_problem(s) == "");
    // Stage 0: device 0 is replica 0, device 1 replica 1.
    CHECK(count(s, [](const Task& t) { return t.kind == TaskKind::forward && t.device == 0; }) == 4);
    CHECK(count(s, [](const Task& t) { return t.kind == TaskKind::forward && t.device == 1; }) == 2);
    for (const Task& t : s.tasks)
      if (t.kind == TaskKind::forward)
        CHECK(t.flops == (t.replica == 0 ? 2 : 4) * 2e9);
    for (const Collective& collective : s.collectives) {
      REQUIRE(collective.tasks.size() == 2);
      for (int member : collective.tasks) {
        const Task& task = s.tasks[member];
        for (int dep : task.deps)
          CHECK(s.tasks[dep].device == task.device);
        if (task.kind != TaskKind::all_gather) {
          REQUIRE(task.deps.size() == 1);
          const Task& producer = s.tasks[task.deps[0]];
          CHECK(producer.kind == TaskKind::backward);
          CHECK(producer.micro_batch == (task.replica == 0 ? 3 : 1)); // its own last micro-batch
        }
      }
    }
  }
}

TEST_CASE("heterogeneous replicas with tensor parallelism replay without deadlock")
{
  for (auto kind : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int zero : {0, 1}) {
      CAPTURE(schedule_name(kind));
      CAPTURE(zero);
      Case c(2, 6, 6, 2, 3, 2, 1, 1);
      c.plan.schedule     = kind;
      c.plan.zero_stage   = zero;
      c.plan.micro_batch  = {3, 1};
      c.plan.grad_accum   = {2, 5};
      c.plan.bucket_bytes = 1 * units::kMiB;
      const Schedule s    = c.lower();
      CHECK(replay_problem(s) == "");
      CHECK(count(s, [](const Task& t) { return t.kind == TaskKind::send && t.replica == 1; }) ==
            5 * 2 * 2 * 2); // 5 micro-batches x 2 boundaries x 2 directions x 2 TP ranks
    }
}

TEST_CASE("lowering is deterministic, acyclic and deadlock-free across plans")
{
  for (auto kind : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int zero = 0; zero <= 3; ++zero)
      for (int tp : {1, 2}) {
        CAPTURE(schedule_name(kind));
        CAPTURE(zero);
        CAPTURE(tp);
        Case c(2, 4, 7, tp, 2, 4 / tp, 1, 3);
        c.plan.schedule     = kind;
        c.plan.zero_stage   = zero;
        c.plan.recompute    = zero % 2 == 1;
        c.plan.bucket_bytes = 1.5 * units::kMiB;
        c.plan.micro_batch  = std::vector<int>(c.plan.dp, 1);
        c.plan.micro_batch.back() = 3;
        std::reverse(c.plan.placement.begin(), c.plan.placement.end());
        const Schedule a = c.lower();
        const Schedule b = c.lower();
        check_same(a, b);
        CHECK(replay_problem(a) == "");
        for (const Task& t : a.tasks)
          for (int dep : t.deps)
            CHECK(dep < t.id); // deps point back, so they cannot form a cycle
        CHECK(duplicate_task_name(a) == "");
      }
}

TEST_CASE("the replay check catches collectives issued in different orders")
{
  Case c(1, 2, 4, 1, 1, 2, 1, 2);
  c.plan.bucket_bytes = 3 * units::kMiB;
  Schedule s          = c.lower();
  REQUIRE(replay_problem(s) == "");
  auto& queue = s.queues[1][static_cast<int>(Stream::data_parallel)];
  REQUIRE(queue.size() == 3);
  std::swap(queue[0], queue[1]);
  CHECK(replay_problem(s).rfind("deadlock", 0) == 0);
}

TEST_CASE("task names are stable and readable")
{
  Case c(1, 4, 4, 1, 2, 2, 1, 4);
  const Schedule s = c.lower();
  std::set<std::string> names;
  for (const Task& t : s.tasks)
    names.insert(s.task_name(t.id));
  CHECK(names.size() == s.tasks.size());
  CHECK(names.count("fwd s1 r0 t0 mb3") == 1);
  CHECK(names.count("bwd s0 r1 t0 mb0") == 1);
  CHECK(names.count("send-act s0 r1 t0 mb2") == 1);
  CHECK(names.count("recv-act s1 r1 t0 mb2") == 1);
  CHECK(names.count("send-grad s1 r0 t0 mb1") == 1);
  CHECK(names.count("recv-grad s0 r0 t0 mb1") == 1);
  CHECK(names.count("ar-grad s0 r1 t0 b0") == 1);
  CHECK(names.count("opt s1 r1 t0") == 1);
}

TEST_CASE("a plan that does not fit the cluster is rejected before lowering")
{
  Case c(1, 4, 4, 1, 2, 2, 1, 1);
  c.plan.placement = {0, 1, 2, 2};
  CHECK_THROWS_WITH_AS(c.lower(), doctest::Contains("plan: placement[3]: expected each device once"), InputError);
}

TEST_CASE("a Llama-2-70B-sized schedule on 768 GPUs lowers quickly")
{
  // 80 transformer blocks of ~855M parameters, embedding and head; tp 8, pp 12, dp 8, 32 micro-batches.
  const Cluster cluster = make_cluster(96, 8, a100(), "llama768");
  models::Workload workload;
  workload.name    = "llama-70b-like";
  workload.seq_len = 4096;
  models::Layer embedding  = block("embedding", 32000.0 * 8192);
  embedding.kind           = "embedding";
  embedding.tensor_parallel_all_reduces = 1;
  workload.layers.push_back(embedding);
  for (int l = 0; l < 80; ++l) {
    models::Layer layer = block("block" + std::to_string(l), 855e6);
    layer.forward_flops_per_sample          = 2 * 855e6 * 4096;
    layer.backward_flops_per_sample         = 4 * 855e6 * 4096;
    layer.activation_bytes_per_sample       = 4096.0 * 8192 * 2;
    layer.saved_activation_bytes_per_sample = 34.0 * 4096 * 8192;
    workload.layers.push_back(layer);
  }
  models::Layer head = embedding;
  head.name          = "head";
  head.kind          = "head";
  workload.layers.push_back(head);

  Plan plan = make_plan(cluster, workload, 8, 12, 8, 1, 32);
  plan.zero_stage = 1;
  const auto start = std::chrono::steady_clock::now();
  const Schedule schedule = lower(plan, make_problem(cluster, workload));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  double bytes = schedule.tasks.capacity() * sizeof(Task);
  for (const Task& t : schedule.tasks)
    bytes += t.deps.capacity() * sizeof(int);
  for (const Collective& c : schedule.collectives)
    bytes += sizeof(Collective) + (c.devices.capacity() + c.tasks.capacity()) * sizeof(int);
  for (const auto& device : schedule.queues)
    for (const auto& queue : device)
      bytes += queue.capacity() * sizeof(int);
  MESSAGE("768-GPU Llama-70B-like schedule: " << schedule.tasks.size() << " tasks, " << schedule.collectives.size()
                                              << " collectives, " << seconds << " s, ~" << bytes / units::kMiB
                                              << " MiB");
  CHECK(schedule.tasks.capacity() < 1.3 * schedule.tasks.size()); // the reserved estimate is close
  // How fast is scenario_bench's business (lower_only/llama2_70b_768), not a unit test's.
  // Every transformer layer: 2 all-reduces forward and 2 backward per micro-batch on each of its 64 devices, each
  // a reduce-scatter and an all-gather under Megatron's sequence parallelism.
  for (TaskKind kind : {TaskKind::reduce_scatter, TaskKind::all_gather})
    CHECK(count_kind(schedule, kind, Stream::tensor_parallel) == 64 * 32 * (80 * 4 + 2 * 2));
  CHECK(count_kind(schedule, TaskKind::all_reduce, Stream::tensor_parallel) == 0);
}

TEST_CASE("a plan that would lower to an absurd number of tasks is refused")
{
  Case c(1, 4, 4, 1, 2, 2, 1, 1);
  c.plan.grad_accum = {50'000'000, 50'000'000};
  CHECK_THROWS_WITH_AS(c.lower(), doctest::Contains("plan: lowers to about"), InputError);
  // The refusal says how much larger the micro-batches must be, and that size is under the limit by the same count.
  std::string message;
  try {
    c.lower();
  } catch (const InputError& e) {
    message = e.what();
  }
  const auto tasks  = std::stod(message.substr(message.find("about ") + 6));
  const auto factor = std::stoi(message.substr(message.find("; micro-batches ") + 16));
  CHECK(factor == static_cast<int>(std::ceil(tasks / 20e6)));
  CHECK_MESSAGE(message.find("micro_batch " + std::to_string(factor) + ", grad_accum " +
                             std::to_string(50'000'000 / factor)) != std::string::npos,
                message);
}

TEST_CASE("the framework: gradient reduction dtype, buckets after the backward pass, what a pipeline send carries")
{
  const Stream dp = Stream::data_parallel;
  // 2 stages x 2 replicas, tp 2; 4 layers of 2^20 parameters, 1 MiB boundary per sample, micro-batch 2.
  Case megatron(1, 8, 4, 2, 2, 2, 2, 3);
  megatron.cluster           = make_cluster(1, 8, a100()); // bf16 needs Ampere
  megatron.plan.dtype        = Dtype::bf16;
  megatron.plan.bucket_bytes = 0.5 * units::kMiB;
  const Schedule m = megatron.lower();
  CHECK(replay_problem(m) == "");
  // Gradient bytes device 0 reduces.
  auto reduced = [&](const Schedule& schedule) {
    double bytes = 0;
    for (int id : schedule.queues[0][static_cast<int>(dp)])
      bytes += schedule.tasks[id].bytes;
    return bytes;
  };
  // bf16 under Megatron-LM: fp32 gradients, 2 layers x 2^19 parameters x 4 bytes per (stage, tp rank).
  CHECK(reduced(m) == 2 * (1 << 19) * 4.0);
  // Scatter-gather: each tp rank sends half of the boundary.
  for (const Task& t : m.tasks)
    if (t.kind == TaskKind::send)
      CHECK(t.bytes == units::kMiB);

  Case deepspeed             = megatron;
  deepspeed.plan.framework   = framework_defaults(Framework::deepspeed);
  const Schedule d           = deepspeed.lower();
  CHECK(replay_problem(d) == "");
  // bf16 gradients all-reduced, then (BF16_Optimizer: each replica updates its half) the bf16 weights gathered.
  CHECK(reduced(d) == 2 * (2 * (1 << 19) * 2.0));
  CHECK(count_collectives(d, TaskKind::all_gather, dp) > 0);
  // Partitioned sends: each tp rank sends half of the activation, and the 512 x 512 attention mask as fp16 with
  // it; half of the gradient back, without the mask.
  int forward_sends = 0, backward_sends = 0;
  for (const Task& t : d.tasks)
    if (t.kind == TaskKind::send) {
      CHECK(t.bytes == (t.backward ? units::kMiB : units::kMiB + 2 * 512.0 * 512));
      (t.backward ? backward_sends : forward_sends) += 1;
    }
  CHECK(forward_sends > 0);
  CHECK(backward_sends > 0);
  // Megatron-DeepSpeed: DeepSpeed's engine reduces as above; GPTModelPipe caches its mask, so only the activation
  // goes, partitioned.
  Case mds           = megatron;
  mds.plan.framework = framework_defaults(Framework::megatron_deepspeed);
  const Schedule md  = mds.lower();
  CHECK(replay_problem(md) == "");
  CHECK(reduced(md) == reduced(d));
  int mds_sends = 0;
  for (const Task& t : md.tasks)
    if (t.kind == TaskKind::send) {
      CHECK(t.bytes == units::kMiB);
      ++mds_sends;
    }
  CHECK(mds_sends == forward_sends + backward_sends);
  Case whole                              = deepspeed;
  whole.plan.framework.partitioned_sends = false; // "pipe_partitioned": false, "grad_partitioned": false
  for (const Task& t : whole.lower().tasks)
    if (t.kind == TaskKind::send)
      CHECK(t.bytes == (t.backward ? 2 * units::kMiB : 2 * units::kMiB + 2 * 512.0 * 512));
  // Every bucket waits for the stage's last backward piece, not the layer that fills it.
  for (int id : d.queues[0][static_cast<int>(dp)]) {
    const Task& bucket = d.tasks[id];
    if (bucket.kind == TaskKind::all_gather)
      continue;
    REQUIRE(bucket.deps.size() == 1);
    const Task& after = d.tasks[bucket.deps[0]];
    CHECK(after.kind == TaskKind::backward);
    CHECK(after.first_layer == 0);
  }
  int waits_for_last_layer = 0;
  for (int id : m.queues[0][static_cast<int>(dp)])
    waits_for_last_layer += m.tasks[m.tasks[id].deps[0]].first_layer == 1;
  CHECK(waits_for_last_layer > 0); // Megatron reduces the first buckets while layer 0's backward runs
}

TEST_CASE("a tied embedding's gradient is all-reduced between the first and last stages before the step")
{
  models::TransformerShape shape = models::testing::gpt_shape(4, 64, 4, 1000, 32);
  const models::Workload tied = models::build_transformer(shape);
  shape.tied_embeddings       = false;
  const models::Workload untied = models::build_transformer(shape);
  const Cluster cluster         = make_cluster(1, 8);
  auto ties = [&](const models::Workload& workload, Framework framework, int pp) {
    Plan plan      = make_plan(cluster, workload, 2, pp, 8 / (2 * pp), 1, 2);
    plan.framework = framework_defaults(framework);
    const Schedule schedule = lower(plan, make_problem(cluster, workload));
    CHECK(replay_problem(schedule) == "");
    std::vector<Collective> found;
    for (const Collective& c : schedule.collectives)
      if (c.kind == TaskKind::all_reduce && schedule.tasks[c.tasks.front()].stream == Stream::data_parallel &&
          schedule.tasks[c.tasks.front()].stage != schedule.tasks[c.tasks.back()].stage)
        found.push_back(c);
    for (const Collective& c : found) {
      CHECK(c.devices.size() == 2);
      CHECK(schedule.tasks[c.tasks.front()].stage == 0);
      CHECK(schedule.tasks[c.tasks.back()].stage == pp - 1);
      CHECK(c.bytes == 1000.0 * 64 / 2 * 2); // the vocabulary-parallel half of the table, 16-bit gradients
      // The optimizer waits for it.
      for (int id : c.tasks) {
        const int device = schedule.tasks[id].device;
        const int step   = schedule.queues[device][static_cast<int>(Stream::compute)].back();
        const auto& deps = schedule.tasks[step].deps;
        CHECK(std::find(deps.begin(), deps.end(), id) != deps.end());
      }
    }
    return found.size();
  };
  CHECK(ties(tied, Framework::megatron, 2) == 4); // 2 replicas x 2 tensor-parallel ranks
  CHECK(ties(tied, Framework::deepspeed, 4) == 2);
  CHECK(ties(tied, Framework::fsdp, 2) == 0);
  CHECK(ties(untied, Framework::megatron, 2) == 0);
  CHECK(ties(tied, Framework::megatron, 1) == 0);
}

TEST_CASE("DeepSpeed's ZeRO-3 gathers tensor by tensor, and no further ahead than its prefetch size")
{
  const models::Workload gpt = models::build_transformer(models::testing::gpt_shape(4, 1024, 16, 1000, 64));
  const Cluster cluster      = make_cluster(1, 4);
  auto lower_with = [&](Framework framework, double prefetch_params) {
    Plan plan                       = make_plan(cluster, gpt, 1, 1, 4, 1, 1);
    plan.zero_stage                 = 3;
    plan.framework                  = framework_defaults(framework);
    plan.framework.prefetch_params  = prefetch_params;
    const Schedule schedule         = lower(plan, make_problem(cluster, gpt));
    CHECK(replay_problem(schedule) == "");
    return schedule;
  };
  const Schedule deepspeed = lower_with(Framework::deepspeed, 1e6); // less than a block's 12.6 M parameters
  const Schedule fsdp      = lower_with(Framework::fsdp, 0);
  for (const Collective& c : deepspeed.collectives) {
    const Task& first = deepspeed.tasks[c.tasks.front()];
    if (c.kind != TaskKind::all_gather && c.kind != TaskKind::reduce_scatter)
      continue;
    CHECK(c.calls == std::max(1, models::parameter_tensors_at_least(gpt.layers[first.first_layer], 1e5)));
    if (gpt.layers[first.first_layer].kind == "transformer")
      CHECK(c.calls == 4); // the four projections' weights: norms and biases stay whole (persistence_threshold)
    CHECK_FALSE(c.list_api); // no DeepSpeed release given: flat collectives
  }
  for (const Collective& c : fsdp.collectives)
    CHECK(c.calls == 1);
  // A block's forward gather waits until the layer before it is computed.
  for (const Task& t : deepspeed.tasks)
    if (t.kind == TaskKind::all_gather && !t.backward && gpt.layers[t.first_layer].kind == "transformer") {
      REQUIRE(t.deps.size() == 1);
      CHECK(deepspeed.tasks[t.deps[0]].first_layer == t.first_layer - 1);
    }
  Plan defaults      = make_plan(cluster, gpt, 1, 1, 4, 1, 1);
  defaults.framework = framework_defaults(Framework::deepspeed);
  CHECK(zero3_prefetch_layers(gpt.layers[1], defaults) == 3); // 5e7 parameters over a block's 12.6 M
  // DeepSpeed leaves tensors under 1e5 elements whole: the norms and biases; the four projections' weights remain.
  CHECK(zero3_calls(gpt.layers[1], defaults) == 4);
  defaults.framework.persistence_threshold = 0;
  CHECK(zero3_calls(gpt.layers[1], defaults) == 12);
  CHECK(zero3_partitioned_share(gpt.layers[1], defaults) == 1);
  defaults.framework.persistence_threshold = 1e5;
  const double weights = zero3_partitioned_share(gpt.layers[1], defaults); // the biases and norms stay whole
  CHECK(weights < 1);
  CHECK(weights > 0.99);
  defaults.framework.persistence_threshold = 1e12; // every tensor whole: nothing to gather
  CHECK(zero3_partitioned_share(gpt.layers[1], defaults) == 0);
  defaults.zero_stage = 3;
  for (const Collective& c : lower(defaults, make_problem(cluster, gpt)).collectives)
    CHECK((c.kind != TaskKind::all_gather && c.kind != TaskKind::reduce_scatter));
  // A prefetch of more layers than an int counts is all of them, not an overflow (a crash in the lowering; 1e15
  // over a layer of 0.01 parameters did it).
  defaults.framework.prefetch_params = 1e300;
  CHECK(zero3_prefetch_layers(gpt.layers[1], defaults) == 1 << 30);
}

TEST_CASE("DeepSpeed's ZeRO-3 gathers again for the backward what it released after the recompute")
{
  const models::Workload gpt = models::build_transformer(models::testing::gpt_shape(4, 1024, 16, 1000, 64));
  const Cluster cluster      = make_cluster(1, 4);
  const models::Layer& block = gpt.layers[1];
  const double h             = 1024;
  Plan plan                  = make_plan(cluster, gpt, 1, 1, 4, 1, 1);
  plan.zero_stage            = 3;
  plan.recompute             = true;
  plan.framework             = framework_defaults(Framework::deepspeed);
  // Between a block's recompute and its backward, DeepSpeed's 1e9 elements are far more than a 12.6 M block.
  CHECK(zero3_backward_regather(block, plan).calls == 0);
  // 12 M: the q/k/v and output projections see the two 4h² projections after them twice (16.8 M) and are
  // released; the first MLP projection sees the last one twice (8.4 M) and is kept, as is the last one.
  plan.framework.max_reuse_distance = 12e6;
  const Zero3Regather two = zero3_backward_regather(block, plan);
  CHECK(two.calls == 2);
  CHECK(two.share == doctest::Approx(4 * h * h / block.params).epsilon(1e-3)); // their weights; biases stay whole
  plan.framework.max_reuse_distance = 0; // DeepSpeed's 0 releases every tensor after each use
  CHECK(zero3_backward_regather(block, plan).calls == 4);
  CHECK(zero3_backward_regather(block, plan).share == doctest::Approx(zero3_partitioned_share(block, plan)));
  // Without full recompute the backward gathers once anyway; FSDP gathers a block once for both.
  plan.recompute = false;
  CHECK(zero3_backward_regather(block, plan).calls == 0);
  plan.recompute = true;
  plan.framework = framework_defaults(Framework::fsdp);
  CHECK(zero3_backward_regather(block, plan).calls == 0);

  // The lowering adds them to each block's backward gather: its calls and bytes beyond the forward's.
  plan.framework                    = framework_defaults(Framework::deepspeed);
  plan.framework.max_reuse_distance = 12e6;
  const Schedule schedule           = lower(plan, make_problem(cluster, gpt));
  CHECK(replay_problem(schedule) == "");
  int checked = 0;
  for (const Collective& c : schedule.collectives) {
    const Task& gather = schedule.tasks[c.tasks.front()];
    if (c.kind != TaskKind::all_gather || gpt.layers[gather.first_layer].kind != "transformer")
      continue;
    const double forward = zero3_partitioned_share(block, plan) * block.params * 2; // fp16 bytes
    CHECK(c.calls == (gather.backward ? 6 : 4));
    CHECK(gather.bytes == doctest::Approx(gather.backward ? forward + two.share * block.params * 2 : forward));
    ++checked;
  }
  CHECK(checked == 4 * 2); // each block's gather before its forward and before its backward, one micro-batch
}

TEST_CASE("blocking sends: a device's next computation waits for its previous send")
{
  // 1F1B over 3 stages, 4 micro-batches: every send but each device's last is followed by a computation.
  Case blocking(1, 3, 6, 1, 3, 1, 1, 4), overlapping = blocking;
  blocking.plan.framework.blocking_sends    = true;
  overlapping.plan.framework.blocking_sends = false;
  const auto waits_on_send = [](const Schedule& schedule) {
    int waits = 0;
    for (const Task& task : schedule.tasks)
      if (is_compute(task.kind))
        for (int dep : task.deps)
          waits += schedule.tasks[dep].kind == TaskKind::send && schedule.tasks[dep].device == task.device;
    return waits;
  };
  const Schedule schedule = blocking.lower();
  int sends               = 0;
  for (const Task& task : schedule.tasks)
    sends += task.kind == TaskKind::send;
  // Each device's last send is waited for by its optimizer step: every send holds something back.
  CHECK(sends == 2 * 2 * 4);
  CHECK(waits_on_send(schedule) == sends);
  CHECK(waits_on_send(overlapping.lower()) == 0);
}

namespace {

/// 8 layers over pp 2 with `chunks` chunks per stage, dp 2, tp 2, 4 micro-batches.
Case interleaved_case(int chunks, int zero_stage = 0)
{
  Case c(2, 4, 8, 2, 2, 2, 1, 4);
  c.plan.virtual_stages = chunks;
  c.plan.stage_starts   = uniform_stage_starts(8, 2 * chunks);
  c.plan.zero_stage     = zero_stage;
  c.plan.bucket_bytes   = 1.5 * units::kMiB;
  return c;
}

} // namespace

TEST_CASE("interleaved 1F1B: chunks go round the stages, the last stage sending back to the first")
{
  for (int zero = 0; zero <= 1; ++zero) {
    CAPTURE(zero);
    const Case c            = interleaved_case(2, zero);
    const Schedule schedule = c.lower();
    CHECK(replay_problem(schedule) == "");
    check_same(schedule, c.lower());
    CHECK(duplicate_task_name(schedule) == "");

    // Chunks in pipeline order: layers 0-1 on stage 0, 2-3 on stage 1, 4-5 on stage 0, 6-7 on stage 1. Every
    // layer runs forward once per micro-batch on its chunk's stage.
    for (int layer = 0; layer < 8; ++layer) {
      const int stage = layer / 2 % 2;
      CHECK(count(schedule, [&](const Task& t) {
              return t.kind == TaskKind::forward && t.first_layer == layer && t.replica == 0 && t.tp_rank == 0;
            }) == 4 * 2); // 4 micro-batches, 2 pieces around the TP all-reduces
      CHECK(count(schedule, [&](const Task& t) {
              return t.kind == TaskKind::forward && t.first_layer == layer && t.stage != stage;
            }) == 0);
    }
    // Stage 1 sends chunk 1's activations (layer 3) to stage 0's chunk 2 (layer 4) and receives its gradients.
    const int last_of_stage1 = c.plan.device(1, 0, 0), first_of_stage0 = c.plan.device(0, 0, 0);
    CHECK(count(schedule, [&](const Task& t) {
            return t.kind == TaskKind::send && !t.backward && t.device == last_of_stage1 && t.peer == first_of_stage0;
          }) == 4);
    CHECK(count(schedule, [&](const Task& t) {
            return t.kind == TaskKind::send && t.backward && t.device == first_of_stage0 && t.peer == last_of_stage1;
          }) == 4);
    // Each chunk reduces its own gradient buckets (1.5 MiB, of 1 MiB layers): 2 layers in 1.5 + 0.5 MiB, where
    // one chunk of 4 layers fills 1.5 + 1.5 + 1 MiB. Every byte once.
    const auto bucket_bytes = [&](const Schedule& s, int device) {
      std::vector<double> bytes;
      for (const Task& t : s.tasks)
        if (t.stream == Stream::data_parallel && t.device == device && t.kind != TaskKind::all_gather)
          bytes.push_back(t.bytes / units::kMiB);
      std::sort(bytes.begin(), bytes.end());
      return bytes;
    };
    Case every_chunk                                    = c;
    every_chunk.plan.framework.buckets_first_chunk_only = false; // DeepSpeed's and DDP's way
    CHECK(bucket_bytes(every_chunk.lower(), first_of_stage0) == std::vector<double>{0.5, 0.5, 1.5, 1.5});
    CHECK(bucket_bytes(every_chunk.lower(), last_of_stage1) == std::vector<double>{0.5, 0.5, 1.5, 1.5});
    // Megatron-LM buckets the first stage's first chunk only: its chunk 2 (layers 4-5) and both of stage 1's
    // reduce in one bucket each, once the chunk's last backward is done.
    CHECK(bucket_bytes(schedule, first_of_stage0) == std::vector<double>{0.5, 1.5, 2});
    CHECK(bucket_bytes(schedule, last_of_stage1) == std::vector<double>{2, 2});
    for (const Task& t : schedule.tasks)
      if (t.stream == Stream::data_parallel && t.device == last_of_stage1 && t.kind != TaskKind::all_gather) {
        REQUIRE(t.deps.size() == 1);
        const Task& after = schedule.tasks[t.deps[0]];
        CHECK(after.kind == TaskKind::backward);
        CHECK(after.micro_batch == 3);
        CHECK((after.first_layer == 2 || after.first_layer == 6));
      }
    CHECK(bucket_bytes(interleaved_case(1, zero).lower(), first_of_stage0) == std::vector<double>{1, 1.5, 1.5});
    CHECK(bucket_bytes(interleaved_case(1, zero).lower(), last_of_stage1) == std::vector<double>{4});
  }
}

TEST_CASE("interleaved 1F1B issues Megatron's order: chunk 0 for a group of pp micro-batches, then chunk 1")
{
  const Case c            = interleaved_case(2);
  const Schedule schedule = c.lower();
  // Device 0 (stage 0): warm-up (2 - 0 - 1) x 2 + 2 = 4 forwards, then alternating; chunk 1 holds layers 4-5.
  std::string order;
  int last = -1;
  for (int id : schedule.queues[0][static_cast<int>(Stream::compute)]) {
    const Task& t = schedule.tasks[id];
    const std::string step = t.kind == TaskKind::optimizer
                                 ? "O"
                                 : std::string(t.backward ? "B" : "F") + std::to_string(t.micro_batch) +
                                       (t.first_layer >= 4 ? "c1" : "c0");
    const int key = t.kind == TaskKind::optimizer ? -2 : t.micro_batch * 4 + (t.first_layer >= 4) * 2 + t.backward;
    if (key != last)
      order += (order.empty() ? "" : " ") + step;
    last = key;
  }
  CHECK(order == "F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0 O");
}

TEST_CASE("DeepSpeed before 0.6 calls ZeRO-3's gathers and reduce-scatters through torch.distributed's lists")
{
  const models::Workload gpt = models::build_transformer(models::testing::gpt_shape(4, 1024, 16, 1000, 64));
  const Cluster cluster      = make_cluster(1, 4);
  auto list_calls = [&](Framework framework, const char* release) {
    Plan plan       = make_plan(cluster, gpt, 1, 1, 4, 1, 1);
    plan.zero_stage = 3;
    plan.framework  = framework_defaults(framework);
    if (release)
      plan.framework.deepspeed = *parse_software_release(release);
    const Schedule schedule = lower(plan, make_problem(cluster, gpt));
    int lists = 0, zero3 = 0;
    for (const Collective& c : schedule.collectives)
      if (c.kind == TaskKind::all_gather || c.kind == TaskKind::reduce_scatter) {
        ++zero3;
        lists += c.list_api ? 1 : 0;
      }
    REQUIRE(zero3 > 0);
    return static_cast<double>(lists) / zero3;
  };
  CHECK(list_calls(Framework::deepspeed, "0.3.15") == 1);
  CHECK(list_calls(Framework::megatron_deepspeed, "0.5") == 1);
  CHECK(list_calls(Framework::deepspeed, "0.6") == 0); // all_gather_coalesced and reduce_scatter_coalesced
  CHECK(list_calls(Framework::deepspeed, nullptr) == 0);
  CHECK(list_calls(Framework::fsdp, "0.3") == 0); // not DeepSpeed's engine
}
