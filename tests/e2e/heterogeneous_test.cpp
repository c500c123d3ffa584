/// Heterogeneity end to end: mixed GPUs, per-replica micro-batches and a model whose layers differ.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

namespace {

/// One node of 4 A100 and one of 4 T4 (about 4.8x slower in fp16), 100 Gb/s between them.
const char* kMixedCluster = R"({"name": "mixed", "regions": [{"nodes": [
  {"name": "fast", "gpu": "A100-SXM4-40GB", "devices": 4, "nic": {"bandwidth_gbps": 100}},
  {"name": "slow", "gpu": "T4", "devices": 4, "nic": {"bandwidth_gbps": 100}}]}]})";

sim::Report simulate_plan(const Cluster& cluster, const models::Workload& workload, const nlohmann::json& plan_json)
{
  const strategies::Plan plan = strategies::plan_from_json(plan_json, "plan.json", cluster, workload);
  const strategies::Problem problem = strategies::problem_for_plan(cluster, workload, plan);
  return sim::simulate(plan, problem, strategies::lower(plan, problem)).report;
}

} // namespace

TEST_CASE("micro-batches in proportion to speed beat uniform ones on a mixed cluster")
{
  const Cluster cluster           = cluster_from_json(nlohmann::json::parse(kMixedCluster), "mixed.json");
  const models::Workload workload = models::load_workload("preset:gpt2-medium");

  // Same global batch (128 sequences) both ways.
  const auto uniform  = simulate_plan(cluster, workload, {{"dp", 8}, {"micro_batch", 4}, {"grad_accum", 4}});
  const auto weighted = simulate_plan(cluster, workload,
                                      {{"dp", 8}, {"micro_batch", {6, 6, 6, 6, 2, 2, 2, 2}}, {"grad_accum", 4}});
  CHECK(uniform.global_batch == weighted.global_batch);
  CHECK(uniform.iteration_time_s / weighted.iteration_time_s > 1.5);

  // With uniform batches the fast GPUs wait for the slow ones at the gradient all-reduce.
  CHECK(uniform.devices[0].idle_s > 2 * uniform.devices[4].idle_s);
  CHECK(uniform.devices[0].compute_s < uniform.devices[4].compute_s / 3);
}

TEST_CASE("a layer-list model with narrowing layers simulates like any other")
{
  const Cluster cluster = cluster_from_json(nlohmann::json::parse(kMixedCluster), "mixed.json");
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) {
    const double width = 2048.0 / (1 + i / 4); // the last four layers are half as wide
    layers.push_back({{"name", "l" + std::to_string(i)},
                      {"kind", "transformer"},
                      {"params", 12 * width * width},
                      {"forward_flops_per_sample", 2 * 12 * width * width * 1024},
                      {"activation_bytes_per_sample", 2 * 1024 * width},
                      {"saved_activation_bytes_per_sample", 34 * 1024 * width}});
  }
  const models::Workload workload =
      models::workload_from_json({{"name", "narrowing"}, {"seq_len", 1024}, {"layers", layers}}, "narrowing.json");

  // Two stages on the two nodes: the A100 node takes the six first layers, the T4 node the two narrow last ones.
  const auto report = simulate_plan(cluster, workload,
                                    {{"pp", 2}, {"dp", 4}, {"stage_starts", {0, 6}}, {"micro_batch", 2},
                                     {"grad_accum", 8}, {"schedule", "1f1b"}});
  CHECK(report.iteration_time_s > 0);
  CHECK(report.devices[0].compute_s > 0);
  CHECK(report.devices[4].compute_s > 0);
  CHECK(report.mfu > 0);
  CHECK(report.mfu < 1);
}
