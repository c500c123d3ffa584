#include "launch/deepspeed_config.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

/// Keys of DeepSpeed's configuration JSON (deepspeed.ai/docs/config-json; deepspeed/runtime/constants.py,
/// zero/config.py, activation_checkpointing/config.py, pipe engine's "pipeline" section) that the export writes.
const std::set<std::string> kTopLevel = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                         "gradient_accumulation_steps", "fp16", "bf16", "communication_data_type",
                                         "zero_optimization", "activation_checkpointing", "pipeline"};
const std::set<std::string> kSections[] = {
    {"enabled", "loss_scale"}, // fp16, bf16
    {"stage", "reduce_bucket_size", "allgather_bucket_size", "overlap_comm", "contiguous_gradients",
     "stage3_prefetch_bucket_size"},
    {"partition_activations", "contiguous_memory_optimization", "cpu_checkpointing"},
    {"activation_checkpoint_interval"}};

void check_schema(const nlohmann::json& config)
{
  for (const auto& [key, value] : config.items()) {
    CHECK_MESSAGE(kTopLevel.count(key) == 1, key << " is not a DeepSpeed configuration key");
    if (!value.is_object())
      continue;
    const std::set<std::string>& allowed = key == "zero_optimization"          ? kSections[1]
                                           : key == "activation_checkpointing" ? kSections[2]
                                           : key == "pipeline"                 ? kSections[3]
                                                                               : kSections[0];
    for (const auto& [inner, _] : value.items())
      CHECK_MESSAGE(allowed.count(inner) == 1, key << "." << inner << " is not a DeepSpeed configuration key");
  }
}

/// A case whose plan was simulated under DeepSpeed's behaviour.
ExportCase deepspeed_case(int tp, int pp, int dp, int micro_batch = 2, int grad_accum = 4)
{
  ExportCase c(tp, pp, dp, micro_batch, grad_accum);
  c.plan.framework = strategies::framework_defaults(strategies::Framework::deepspeed);
  return c;
}

} // namespace

TEST_CASE("the DeepSpeed configuration: batch sizes that multiply out, precision, ZeRO and its buckets")
{
  ExportCase c      = deepspeed_case(1, 1, 16, 2, 4);
  c.plan.zero_stage = 3;
  c.plan.recompute  = true;
  const nlohmann::json config = deepspeed_config(c.inputs());
  check_schema(config);
  // DeepSpeed asserts train_batch_size = micro-batch x accumulation x data-parallel size.
  CHECK(config["train_batch_size"] == 2 * 4 * 16);
  CHECK(config["train_micro_batch_size_per_gpu"] == 2);
  CHECK(config["gradient_accumulation_steps"] == 4);
  CHECK(config["fp16"]["enabled"] == true);
  CHECK(config["zero_optimization"]["stage"] == 3);
  CHECK(config["zero_optimization"]["stage3_prefetch_bucket_size"] ==
        static_cast<long long>(c.plan.framework.prefetch_params));
  CHECK(config.contains("activation_checkpointing"));
  CHECK(!config.contains("pipeline"));
}

TEST_CASE("a pipeline's stages go to PipelineModule as explicit boundaries")
{
  ExportCase c        = deepspeed_case(1, 4, 4);
  c.plan.stage_starts = {0, 5, 14, 24};
  c.plan.recompute    = true;
  const nlohmann::json config = deepspeed_config(c.inputs());
  check_schema(config);
  CHECK(config["pipeline"]["activation_checkpoint_interval"] == 1);
  const nlohmann::json parts = pipeline_parts(c.inputs());
  CHECK(parts["num_stages"] == 4);
  CHECK(parts["parts"] == nlohmann::json({0, 5, 14, 24, 26}));
  CHECK(parts["layers"].size() == 26);
  CHECK(parts["layers"][0] == "embedding");
  CHECK(parts["activation_checkpoint_interval"] == 1);
}

TEST_CASE("what DeepSpeed cannot run is refused, naming the plan field")
{
  SUBCASE("tensor parallelism")
  {
    ExportCase c = deepspeed_case(2, 1, 8);
    CHECK_THROWS_WITH_AS(deepspeed_config(c.inputs()), doctest::Contains("best.json: tp: 2"), InputError);
  }
  SUBCASE("ZeRO-2 with a pipeline")
  {
    ExportCase c      = deepspeed_case(1, 2, 8);
    c.plan.zero_stage = 2;
    CHECK_THROWS_WITH_AS(deepspeed_config(c.inputs()), doctest::Contains("best.json: zero_stage: 2 with pp 2"),
                         InputError);
  }
  SUBCASE("a plan simulated as Megatron-LM moves bytes")
  {
    ExportCase c(1, 1, 16);
    CHECK_THROWS_WITH_AS(deepspeed_config(c.inputs()), doctest::Contains("best.json: framework: megatron"),
                         InputError);
  }
  SUBCASE("per-layer sharding (OSDP)")
  {
    ExportCase c = deepspeed_case(1, 1, 16);
    c.plan.layer_sharding.assign(c.workload.layers.size(), strategies::LayerSharding{1, 2});
    CHECK_THROWS_WITH_AS(deepspeed_config(c.inputs()), doctest::Contains("best.json: layer_sharding"), InputError);
  }
  SUBCASE("virtual stages (interleaved 1F1B)")
  {
    ExportCase c          = deepspeed_case(1, 2, 8);
    c.plan.virtual_stages = 2;
    c.plan.stage_starts   = {0, 7, 13, 19};
    CHECK_THROWS_WITH_AS(deepspeed_config(c.inputs()), doctest::Contains("best.json: virtual_stages: 2"),
                         InputError);
  }
}

TEST_CASE("DeepSpeed's ZeRO defaults as its code has them: nothing it ignores at stage 0, overlap at stage 3")
{
  ExportCase none = deepspeed_case(1, 1, 16);
  const nlohmann::json plain = deepspeed_config(none.inputs());
  check_schema(plain);
  CHECK(plain["zero_optimization"] == nlohmann::json({{"stage", 0}})); // the engine reads nothing else there
  none.plan.framework.reduce_during_backward = true;
  CHECK_THROWS_WITH_AS(deepspeed_config(none.inputs()),
                       doctest::Contains("best.json: framework.reduce_during_backward: true with zero_stage 0"),
                       InputError);
  none.plan.framework.reduce_during_backward = false;
  none.plan.framework.bucket_params          = 4e7;
  CHECK_THROWS_WITH_AS(deepspeed_config(none.inputs()), doctest::Contains("best.json: framework.bucket_params"),
                       InputError);

  ExportCase sharded      = deepspeed_case(1, 1, 16);
  sharded.plan.zero_stage = 3;
  CHECK(deepspeed_config(sharded.inputs())["zero_optimization"]["overlap_comm"] == true);
  ExportCase partitioned      = deepspeed_case(1, 1, 16);
  partitioned.plan.zero_stage = 1;
  CHECK(deepspeed_config(partitioned.inputs())["zero_optimization"]["overlap_comm"] == false);
}
