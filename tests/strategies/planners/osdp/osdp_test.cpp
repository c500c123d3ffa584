#include "strategies/planners/osdp/osdp_search.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "models/transformer.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Layers of different sizes with α-β costs: latency makes many slices expensive, size makes sharding costly.
OsdpProblem small_problem(int layers, int micro_steps)
{
  OsdpProblem problem;
  problem.devices     = 4;
  problem.micro_steps = micro_steps;
  for (int l = 0; l < layers; ++l) {
    OsdpLayer layer;
    layer.params = 1e6 * (1 + (l * 7) % 5);
    const double bytes = 2 * layer.params;
    for (int k = 0; k < 4; ++k) {
      const double slice       = bytes / kOsdpSlices[k];
      layer.all_gather_s[k]     = 3 * (1e-4 + slice * 0.75 / 1e9);
      layer.reduce_scatter_s[k] = 3 * (1e-4 + slice * 0.75 / 1e9);
    }
    layer.all_reduce_s = 6 * (1e-4 + bytes * 0.75 / 1e9) * 0.5;
    problem.layers.push_back(layer);
  }
  return problem;
}

/// The best choice by trying all of them.
OsdpResult brute_force(const OsdpProblem& problem)
{
  const auto choices = osdp_choices();
  const int layers   = static_cast<int>(problem.layers.size());
  std::vector<int> index(layers, 0);
  OsdpResult best;
  while (true) {
    std::vector<LayerSharding> choice;
    for (int i : index)
      choice.push_back(choices[i]);
    const double memory  = osdp_memory(problem, choice);
    const double seconds = osdp_seconds(problem, choice);
    if (memory <= problem.available_bytes && (!best.feasible || seconds < best.seconds)) {
      best.feasible     = true;
      best.seconds      = seconds;
      best.choice       = choice;
      best.memory_bytes = memory;
    }
    int l = 0;
    while (l < layers && ++index[l] == static_cast<int>(choices.size()))
      index[l++] = 0;
    if (l == layers)
      return best;
  }
}

} // namespace

TEST_CASE("osdp's search equals brute force on small models")
{
  for (int layers : {1, 2, 3}) {
    for (int micro_steps : {1, 4}) {
      OsdpProblem problem = small_problem(layers, micro_steps);
      std::vector<LayerSharding> replicated(layers), sharded;
      for (int l = 0; l < layers; ++l)
        sharded.push_back({8, 8});
      const double most = osdp_memory(problem, replicated);
      const double least = osdp_memory(problem, sharded);
      for (double share : {1.2, 1.0, 0.9, 0.7, 0.5, 0.35, 0.25, 0.1}) {
        problem.available_bytes = least + share * (most - least);
        CAPTURE(layers);
        CAPTURE(micro_steps);
        CAPTURE(share);
        const OsdpResult expected = brute_force(problem);
        const OsdpResult found    = osdp_search(problem);
        REQUIRE(found.feasible == expected.feasible);
        if (!found.feasible)
          continue;
        CHECK(found.seconds == doctest::Approx(expected.seconds).epsilon(1e-12));
        CHECK(osdp_seconds(problem, found.choice) == doctest::Approx(found.seconds).epsilon(1e-12));
        CHECK(osdp_memory(problem, found.choice) <= problem.available_bytes);
      }
      problem.available_bytes = least * 0.99;
      CHECK_FALSE(osdp_search(problem).feasible);
    }
  }
}

TEST_CASE("with room to spare nothing is sharded; under a tight limit the planner shards and fits")
{
  const Cluster cluster           = make_cluster(2, 4);
  const models::Workload workload = make_workload(8, 40e6); // 320 M parameters: 5.1 GB of model states
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 64;
  PlannerContext context;

  auto best = [&] {
    auto candidates = make_osdp_planner()->propose(problem, context);
    std::sort(candidates.begin(), candidates.end(), better_candidate);
    return candidates.front();
  };
  const Candidate roomy = best();
  CHECK(roomy.fits());
  CHECK_FALSE(roomy.plan.shards_layers());

  problem.memory_limit_bytes = 4.5 * units::kGiB; // less what the framework holds, for states and activations
  const Candidate tight      = best();
  CHECK(tight.fits());
  CHECK(tight.plan.shards_layers());
  validate_plan(tight.plan, cluster, workload, "osdp");
  CHECK(replay_problem(lower(tight.plan, problem)).empty());

  problem.memory_limit_bytes = 1.2 * units::kGiB;
  CHECK_THROWS_AS(make_osdp_planner()->propose(problem, context), InfeasiblePlan);
}

TEST_CASE("osdp finds a plan wherever ZeRO-3 on every layer fits, even when the optimizer step's copy binds")
{
  // Wide and shallow (1.4 B parameters in 6 blocks) on 8 A100s under 8 GiB: with every layer kept whole the
  // step's fp32 gradient copy alone would need 5.7 GB, so a budget that assumed it rejected every choice.
  const Cluster cluster = make_cluster(2, 4, a100(), "8xA100");
  models::TransformerShape shape;
  shape.name            = "wide-shallow";
  shape.family          = "gpt2";
  shape.layers          = 6;
  shape.hidden          = 4096;
  shape.heads           = shape.kv_heads = 64;
  shape.intermediate    = 16384;
  shape.vocab           = 50257;
  shape.seq_len         = shape.max_positions = 1024;
  shape.flash_attention = true;
  shape.split_blocks    = true;
  const models::Workload workload = models::build_transformer(shape);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 128;
  problem.memory_limit_bytes      = 8 * units::kGiB;

  Plan zero3       = uniform_batch_plan(Degrees{1, 1, 8}, {0, 1, 2, 3, 4, 5, 6, 7}, {0}, 1, problem);
  zero3.zero_stage = 3;
  for (const DeviceMemory& m : plan_memory(zero3, problem))
    REQUIRE(m.over_bytes() <= 0);

  const auto candidates = make_osdp_planner()->propose(problem, PlannerContext{});
  REQUIRE_FALSE(candidates.empty());
  for (const Candidate& candidate : candidates) {
    CAPTURE(candidate.note);
    CHECK(candidate.fits());
    CHECK(candidate.plan.shards_layers());
  }
}
