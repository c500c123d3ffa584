/// The kernels a compute task runs: the same operators the cost model prices, in pieces between the
/// tensor-parallel all-reduces, with the forward again in a recomputing backward, scaled like the schedule.

#include "fixtures.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/scale.hpp"
#include "strategies/lowering/task_kernels.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

double flops_of(const std::vector<models::Kernel>& kernels)
{
  double flops = 0;
  for (const auto& k : kernels)
    flops += k.flops;
  return flops;
}

std::set<std::string> names_of(const std::vector<models::Kernel>& kernels)
{
  std::set<std::string> names;
  for (const auto& k : kernels)
    names.insert(k.name);
  return names;
}

struct GptCase {
  Cluster cluster           = make_cluster(1, 4);
  models::Workload workload = models::build_transformer(models::testing::gpt_shape(2, 256, 4, 512, 128));
  Plan plan;
  Schedule schedule;

  GptCase(int tp, bool recompute)
  {
    plan           = make_plan(cluster, workload, tp, 1, 4 / tp, 2, 1);
    plan.recompute = recompute;
    schedule       = lower(plan, make_problem(cluster, workload));
  }
  /// Device 0's compute tasks of micro-batch 0 on layer `layer`, in order.
  std::vector<const Task*> tasks(TaskKind kind, int layer) const
  {
    std::vector<const Task*> found;
    for (int id : schedule.queues[0][static_cast<int>(Stream::compute)]) {
      const Task& t = schedule.tasks[id];
      if (t.kind == kind && t.micro_batch == 0 && t.first_layer <= layer && layer < t.first_layer + t.layer_count)
        found.push_back(&t);
    }
    return found;
  }
};

} // namespace

TEST_CASE("task_kernels: a layer's tasks do its FLOPs, whole or in tensor-parallel pieces")
{
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const GptCase c(tp, false);
    for (TaskKind kind : {TaskKind::forward, TaskKind::backward}) {
      // The lowering gives a layer's pieces equal shares; their operators are the layer's whole.
      double kernels = 0, tasks = 0;
      for (const Task* task : c.tasks(kind, 1)) {
        kernels += flops_of(task_kernels(*task, c.workload, tp, 1));
        tasks += task->flops;
      }
      CHECK(kernels == doctest::Approx(tasks).epsilon(1e-9));
    }
  }
}

TEST_CASE("task_kernels: the pieces of a tp block split at its all-reduces; backward runs them in reverse")
{
  const GptCase c(2, false);
  const auto forward  = c.tasks(TaskKind::forward, 1);
  const auto backward = c.tasks(TaskKind::backward, 1);
  REQUIRE(forward.size() == 2);
  REQUIRE(backward.size() == 2);
  const auto attention = names_of(task_kernels(*forward[0], c.workload, 2, 1));
  const auto mlp       = names_of(task_kernels(*forward[1], c.workload, 2, 1));
  CHECK(attention.count("qkv"));
  CHECK(attention.count("attention_output"));
  CHECK(!attention.count("mlp_up"));
  CHECK(mlp.count("mlp_down"));
  CHECK(!mlp.count("qkv"));
  // The backward's first piece is the MLP's, from the gradient of its last projection's input.
  const auto first_back = task_kernels(*backward[0], c.workload, 2, 1);
  const auto product    = std::find_if(first_back.begin(), first_back.end(),
                                       [](const models::Kernel& k) { return k.kind == models::Kernel::Kind::matmul; });
  REQUIRE(product != first_back.end());
  CHECK(product->name == "mlp_down.dgrad");
  CHECK(names_of(task_kernels(*backward[1], c.workload, 2, 1)).count("qkv.wgrad"));
}

TEST_CASE("task_kernels: a recomputing backward runs the forward's kernels again first")
{
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const GptCase plain(tp, false), again(tp, true);
    double plain_flops = 0, again_flops = 0, forward_flops = 0;
    for (const Task* t : plain.tasks(TaskKind::backward, 1))
      plain_flops += flops_of(task_kernels(*t, plain.workload, tp, 1));
    for (const Task* t : again.tasks(TaskKind::backward, 1))
      again_flops += flops_of(task_kernels(*t, again.workload, tp, 1));
    for (const Task* t : plain.tasks(TaskKind::forward, 1))
      forward_flops += flops_of(task_kernels(*t, plain.workload, tp, 1));
    CHECK(again_flops == doctest::Approx(plain_flops + forward_flops));
  }
}

TEST_CASE("task_kernels: a scaled run's kernels do the scaled task's FLOPs")
{
  const GptCase c(1, false);
  const Schedule scaled = scale_schedule(c.schedule, 0.25);
  for (const Task* task : c.tasks(TaskKind::forward, 1)) {
    const Task& small = scaled.tasks[task->id];
    CHECK(flops_of(task_kernels(*task, c.workload, 1, 0.25)) == doctest::Approx(small.flops).epsilon(1e-9));
  }
}

TEST_CASE("selective recompute: a backward reruns its attention core's forward first, and only that")
{
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    GptCase plain(tp, false);
    GptCase selective(tp, false);
    selective.plan.selective_recompute = true;
    selective.schedule = lower(selective.plan, make_problem(selective.cluster, selective.workload));
    const auto core    = std::set<std::string>{"attention_scores", "softmax", "attention_dropout", "attention_context"};
    const models::Layer& block = plain.workload.layers[1];
    double plain_flops = 0, selective_flops = 0;
    for (const Task* t : selective.tasks(TaskKind::backward, 1)) {
      CHECK(t->recomputes_attention);
      const auto kernels = task_kernels(*t, selective.workload, tp, 1);
      selective_flops += flops_of(kernels);
      // The rerun forward kernels come first and carry the core's own names.
      for (std::size_t i = 0; i < kernels.size() && core.count(kernels[i].name); ++i)
        CHECK(kernels[i].name.find('.') == std::string::npos);
    }
    for (const Task* t : plain.tasks(TaskKind::backward, 1)) {
      CHECK_FALSE(t->recomputes_attention);
      plain_flops += flops_of(task_kernels(*t, plain.workload, tp, 1));
    }
    // 2 samples; without tp one backward task covers the stage's two blocks, with tp 2 one block's pieces.
    const int blocks = tp == 1 ? 2 : 1;
    CHECK(selective_flops - plain_flops ==
          doctest::Approx(block.selective_recompute_flops_per_sample * 2 * blocks / tp));
  }
}
