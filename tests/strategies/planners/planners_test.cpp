#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/planner.hpp"
#include "strategies/search/plan_space.hpp"
#include "strategies/search/search.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"
#include "tests/models/moe_shape.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Three nodes of 4 fast GPUs and one of 4 slow ones, the slow node behind a thinner NIC.
Cluster mixed_cluster()
{
  Cluster cluster("mixed");
  const int fast   = cluster.add_gpu(a100());
  const int slow   = cluster.add_gpu(v100());
  const int region = cluster.add_region("dc", 5e-6);
  for (int n = 0; n < 4; ++n) {
    const bool is_slow = n == 3;
    const int node     = cluster.add_node(region, "node" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                          Link{(is_slow ? 10 : 100) * units::kGbps, 5e-6});
    for (int d = 0; d < 4; ++d)
      cluster.add_device(node, is_slow ? slow : fast);
  }
  return cluster;
}

Problem problem_of(const Cluster& cluster, const models::Workload& workload, int global_batch)
{
  Problem problem      = make_problem(cluster, workload);
  problem.global_batch = global_batch;
  return problem;
}

} // namespace

TEST_CASE("planners: every planner returns valid plans for the global batch")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(12, 50e6);
  const Problem problem           = problem_of(cluster, workload, 32);
  PlannerContext context;
  for (const PlannerInfo& info : planners()) {
    CAPTURE(info.name);
    const auto candidates = info.make()->propose(problem, context);
    REQUIRE_FALSE(candidates.empty());
    for (const Candidate& c : candidates) {
      // Degrees multiply to the device count, placement is a bijection, stages cover every layer.
      CHECK_NOTHROW(validate_plan(c.plan, cluster, workload, std::string(info.name)));
      CHECK(c.plan.global_batch() == 32);
      CHECK(c.estimate.iteration_time_s > 0);
    }
    CHECK(std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.fits(); }));
  }
}

TEST_CASE("planners: every planner's plans run under the problem's framework")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(12, 50e6);
  Problem problem                 = problem_of(cluster, workload, 32);
  problem.framework               = framework_defaults(Framework::deepspeed);
  PlannerContext context;
  for (const PlannerInfo& info : planners()) {
    CAPTURE(info.name);
    for (const Candidate& c : info.make()->propose(problem, context))
      CHECK(c.plan.framework == problem.framework);
  }
}

TEST_CASE("planners: searches are deterministic")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(12, 50e6);
  const Problem problem           = problem_of(cluster, workload, 32);
  PlannerContext context;
  context.seed = 7;
  context.flags.push_back("anneal");
  for (const PlannerInfo& info : planners()) {
    CAPTURE(info.name);
    const auto first  = search(*info.make(), problem, context).ranked;
    const auto second = search(*info.make(), problem, context).ranked;
    REQUIRE(first.size() == second.size());
    for (std::size_t i = 0; i < first.size(); ++i)
      CHECK(first[i].plan == second[i].plan);
  }
}

TEST_CASE("planners: amp gives the stage on faster GPUs more layers")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(24, 50e6);
  const Problem problem           = problem_of(cluster, workload, 48);
  const auto ranked               = search(*find_planner("amp").make(), problem, {}).ranked;
  // Among four-stage data-parallel plans (one node per stage, compute-bound), the last stage runs on the slow node.
  const auto four =
      std::find_if(ranked.begin(), ranked.end(), [](const Candidate& c) { return c.plan.pp == 4 && c.plan.tp == 1; });
  REQUIRE(four != ranked.end());
  const auto& starts    = four->plan.stage_starts;
  const int slow_layers = 24 - starts[3];
  for (int s = 0; s < 3; ++s)
    CHECK(slow_layers < starts[s + 1] - starts[s]);
}

TEST_CASE("planners: hethub splits layers in proportion to speed, one GPU type per stage")
{
  const Cluster cluster           = mixed_cluster();
  const models::Workload workload = make_workload(24, 50e6);
  const Problem problem           = problem_of(cluster, workload, 48);
  for (const Candidate& c : find_planner("hethub").make()->propose(problem, {})) {
    for (int s = 0; s < c.plan.pp; ++s)
      for (int r = 0; r < c.plan.dp; ++r)
        for (int t = 0; t < c.plan.tp; ++t)
          CHECK(cluster.gpu_of(c.plan.device(s, r, t)).name == cluster.gpu_of(c.plan.device(s, 0, 0)).name);
    if (c.plan.pp == 4 && c.plan.tp == 1) { // compute-bound: the V100 stage holds fewer layers than each A100 stage
      int v100_layers = 0, a100_layers = 1 << 30;
      for (int s = 0; s < 4; ++s) {
        const int layers = c.plan.stage_end(s, 24) - c.plan.stage_starts[s];
        if (cluster.gpu_of(c.plan.device(s, 0, 0)).name == v100().name)
          v100_layers = layers;
        else
          a100_layers = std::min(a100_layers, layers);
      }
      CHECK(v100_layers < a100_layers);
    }
  }
}

TEST_CASE("planners: infeasible problems are refused with a reason")
{
  const Cluster cluster = mixed_cluster();
  SUBCASE("no data-parallel degree divides the global batch")
  {
    // Two layers on 16 devices with tp at most 4: pp <= 2, so dp >= 2, and 7 sequences do not split.
    const models::Workload workload = make_workload(2, 1e6);
    const Problem problem           = problem_of(cluster, workload, 7);
    for (const char* name : {"amp", "megatron", "random", "hethub"}) {
      CAPTURE(name);
      CHECK_THROWS_WITH_AS(find_planner(name).make()->propose(problem, {}), doctest::Contains("global batch 7"),
                           InfeasiblePlan);
    }
  }
  SUBCASE("the model fits on no plan: every candidate is marked, none dropped")
  {
    const models::Workload workload = make_workload(4, 20e9); // 80 B parameters on 16 GPUs
    const Problem problem           = problem_of(cluster, workload, 16);
    for (const char* name : {"amp", "megatron", "hethub"}) {
      CAPTURE(name);
      const auto ranked = search(*find_planner(name).make(), problem, {}).ranked;
      REQUIRE_FALSE(ranked.empty());
      for (const Candidate& c : ranked) {
        REQUIRE_FALSE(c.fits());
        CHECK(c.memory_overflow->over_bytes() > 0);
      }
    }
  }
  SUBCASE("no global batch")
  {
    const models::Workload workload = make_workload(4, 1e6);
    CHECK_THROWS_AS(find_planner("amp").make()->propose(problem_of(cluster, workload, 0), {}), InputError);
  }
}

TEST_CASE("planners: the data-parallel planners recompute activations when no ZeRO stage holds a sequence without")
{
  // Eight 16 GB V100s; 8 blocks that keep 2 GiB each per sequence for backward (16 GiB: no ZeRO stage helps, as
  // it shards model states only), but pass on 16 MiB: with recompute a sequence needs a few GiB.
  const Cluster cluster = make_cluster(2, 4);
  models::Workload workload;
  workload.name    = "activation-heavy";
  workload.seq_len = 2048;
  for (int l = 0; l < 8; ++l) {
    models::Layer layer                     = block("block" + std::to_string(l), 1e6);
    layer.saved_activation_bytes_per_sample = 2 * units::kGiB;
    layer.activation_bytes_per_sample       = 16 * units::kMiB;
    workload.layers.push_back(layer);
  }
  const Problem problem = problem_of(cluster, workload, 8);
  for (const char* name : {"poplar", "deepspeed", "whale", "osdp", "zero3"}) {
    CAPTURE(name);
    const auto ranked = search(*find_planner(name).make(), problem, {}).ranked;
    REQUIRE_FALSE(ranked.empty());
    for (const Candidate& c : ranked) {
      CAPTURE(c.note);
      CHECK(c.plan.recompute);
      CHECK(c.fits());
    }
  }

  // With room for a sequence without it, recompute stays off: it costs a forward pass more.
  const models::Workload light = make_workload(8, 1e6);
  for (const char* name : {"poplar", "deepspeed", "whale", "osdp"}) {
    CAPTURE(name);
    for (const Candidate& c : search(*find_planner(name).make(), problem_of(cluster, light, 8), {}).ranked)
      CHECK_FALSE(c.plan.recompute);
  }
}

TEST_CASE("planners: the data-parallel planners try selective recompute before full where attention allows it")
{
  // GPT-2 medium at 4,096 tokens without flash attention on eight 16 GB V100s: its s x s attention matrices keep
  // 1.4 GiB per block and sequence (35 GiB in all), which no ZeRO stage holds; selective recompute keeps 34sbh
  // per block (3.4 GiB in all) and fits, at a third of full recompute's extra forward.
  const Cluster cluster           = make_cluster(2, 4);
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(24, 1024, 16, 50257, 4096));
  const Problem problem           = problem_of(cluster, workload, 8);
  for (const char* name : {"poplar", "deepspeed", "whale", "osdp", "zero3"}) {
    CAPTURE(name);
    const auto ranked = search(*find_planner(name).make(), problem, {}).ranked;
    REQUIRE_FALSE(ranked.empty());
    const Candidate& best = ranked.front();
    CAPTURE(best.note);
    CHECK(best.plan.selective_recompute);
    CHECK_FALSE(best.plan.recompute);
    CHECK(best.fits());
    CHECK(best.note.find("selective recompute") != std::string::npos);
  }
}

TEST_CASE("planners: an unknown name lists the known ones")
{
  CHECK_THROWS_WITH_AS(find_planner("alpa"), doctest::Contains("unknown planner 'alpa'; known: amp"), InputError);
}

TEST_CASE("amp and hethub enumerate expert-parallel degrees on a mixture-of-experts model, never on a dense one")
{
  const Cluster cluster        = make_cluster(2, 4, a100());
  const models::Workload moe   = models::build_transformer(models::testing::moe_shape());
  const models::Workload dense = make_workload(6);
  PlannerContext context;
  // (megatron keeps one plan per degrees, the fastest ep that fits: tests/e2e/mixture_of_experts_test.cpp.)
  for (const char* name : {"amp", "hethub"}) {
    CAPTURE(name);
    std::set<int> tried;
    for (const Candidate& c : find_planner(name).make()->propose(problem_of(cluster, moe, 32), context)) {
      CHECK_NOTHROW(validate_plan(c.plan, cluster, moe, name));
      tried.insert(c.plan.ep);
    }
    CHECK(tried == std::set<int>{1, 2, 4}); // every common divisor of the 4 experts and dp
    for (const Candidate& c : find_planner(name).make()->propose(problem_of(cluster, dense, 32), context))
      CHECK(c.plan.ep == 1);
  }
}

TEST_CASE("planners: tensor parallelism never splits a head, a key-value group or an MLP unevenly")
{
  // 6 heads on nodes of 8: only tp 1 and 2 give each rank whole heads.
  const Cluster cluster           = make_cluster(2, 8, a100());
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(4, 384, 6, 1000, 256));
  const Problem problem           = problem_of(cluster, workload, 32);
  CHECK(max_tensor_parallel(problem) == 2);
  PlannerContext context;
  context.flags = {"anneal"};
  for (const PlannerInfo& info : planners()) {
    CAPTURE(info.name);
    for (const Candidate& c : info.make()->propose(problem, context)) {
      CHECK(c.plan.tp <= 2);
      CHECK_NOTHROW(validate_plan(c.plan, cluster, workload, std::string(info.name)));
    }
  }
}

TEST_CASE("planners: megatron interleaves only micro-batch counts Megatron-LM's schedule runs")
{
  // 80 layers of hidden 8192 on 32 A100s: pipelines of 4 and more, interleaved; at global batch 80 a
  // micro-batch of 16 leaves 5 micro-batches, a last group of 1 behind one of pp 4, which Megatron-LM refuses.
  const Cluster cluster           = make_cluster(4, 8, a100());
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(80, 8192, 64, 32000, 2048));
  const Problem problem           = problem_of(cluster, workload, 80);
  int interleaved = 0;
  for (const Candidate& c : find_planner("megatron").make()->propose(problem, PlannerContext{})) {
    CAPTURE(plan_to_json(c.plan).dump());
    CHECK_NOTHROW(validate_plan(c.plan, cluster, workload, "megatron"));
    if (c.plan.virtual_stages > 1) {
      ++interleaved;
      CHECK(c.plan.interleaves(c.plan.grad_accum[0]));
    }
  }
  CHECK(interleaved > 0);
}
