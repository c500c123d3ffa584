#pragma once
/// A GPT-2-medium-shaped model on 4 nodes of 4 GPUs, and a plan over it, for the export tests.

#include "fixtures.hpp"
#include "launch/plan_export.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

namespace hetsim::launch::testing {

struct ExportCase {
  Cluster cluster           = strategies::testing::make_cluster(4, 4);
  models::Workload workload = models::build_transformer(models::testing::gpt_shape());
  strategies::Plan plan;

  ExportCase(int tp, int pp, int dp, int micro_batch = 2, int grad_accum = 4)
      : plan(strategies::testing::make_plan(cluster, workload, tp, pp, dp, micro_batch, grad_accum))
  {
  }
  ExportInputs inputs() const { return {&cluster, &workload, &plan, "best.json", "model.json", "cluster.json"}; }
};

} // namespace hetsim::launch::testing
