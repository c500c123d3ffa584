#include "launch/deepspeed_config.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"
#include "framework_checks.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

/// DeepSpeed v0.17.4's objections to the case's configuration: each a failed check.
void check_schema(const ExportCase& c, const nlohmann::json& config)
{
  for (const std::string& objection :
       deepspeed_objections(config, static_cast<int>(c.plan.placement.size()), c.plan.pp))
    FAIL_CHECK("DeepSpeed v0.17.4 objects: " << objection);
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
  check_schema(c, config);
  // DeepSpeed asserts train_batch_size = micro-batch x accumulation x data-parallel size.
  CHECK(config["train_batch_size"] == 2 * 4 * 16);
  CHECK(config["train_micro_batch_size_per_gpu"] == 2);
  CHECK(config["gradient_accumulation_steps"] == 4);
  CHECK(config["fp16"]["enabled"] == true);
  CHECK(config["zero_optimization"]["stage"] == 3);
  CHECK(config["zero_optimization"]["stage3_prefetch_bucket_size"] ==
        static_cast<long long>(c.plan.framework.prefetch_params));
  CHECK(config["zero_optimization"]["stage3_param_persistence_threshold"] ==
        static_cast<long long>(c.plan.framework.persistence_threshold));
  CHECK(config["zero_optimization"]["stage3_max_reuse_distance"] ==
        static_cast<long long>(*c.plan.framework.max_reuse_distance));
  CHECK(config.contains("activation_checkpointing"));
  CHECK(!config.contains("pipeline"));
}

TEST_CASE("a pipeline's stages go to PipelineModule as explicit boundaries")
{
  ExportCase c        = deepspeed_case(1, 4, 4);
  c.plan.stage_starts = {0, 5, 14, 24};
  c.plan.recompute    = true;
  const nlohmann::json config = deepspeed_config(c.inputs());
  check_schema(c, config);
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
  check_schema(none, plain);
  CHECK(plain["zero_optimization"] == nlohmann::json({{"stage", 0}})); // the engine reads nothing else there
  none.plan.framework.reduce_during_backward = true;
  CHECK_THROWS_WITH_AS(deepspeed_config(none.inputs()),
                       doctest::Contains("best.json: framework.reduce_during_backward: true with zero_stage 0"),
                       InputError);
  none.plan.framework.reduce_during_backward = false;
  none.plan.framework.bucket_params          = 4e7;
  CHECK_THROWS_WITH_AS(deepspeed_config(none.inputs()), doctest::Contains("best.json: framework.bucket_params"),
                       InputError);

  // The pipeline engine buckets every stage (pipe/engine.py:300), not pipeline rank 0's first chunk alone.
  ExportCase pipelined                              = deepspeed_case(1, 4, 4);
  pipelined.plan.framework.buckets_first_chunk_only = true;
  CHECK_THROWS_WITH_AS(deepspeed_config(pipelined.inputs()),
                       doctest::Contains("best.json: framework.buckets_first_chunk_only: true with pp 4"), InputError);
  // Without a pipeline too: reducing after the backward (ZeRO-0's only way), the setting makes one bucket.
  ExportCase alone                              = deepspeed_case(1, 1, 16);
  alone.plan.framework.buckets_first_chunk_only = true;
  CHECK_THROWS_WITH_AS(deepspeed_config(alone.inputs()),
                       doctest::Contains("best.json: framework.buckets_first_chunk_only: true with pp 1"), InputError);

  ExportCase sharded      = deepspeed_case(1, 1, 16);
  sharded.plan.zero_stage = 3;
  CHECK(deepspeed_config(sharded.inputs())["zero_optimization"]["overlap_comm"] == true);
  ExportCase partitioned      = deepspeed_case(1, 1, 16);
  partitioned.plan.zero_stage = 1;
  CHECK(deepspeed_config(partitioned.inputs())["zero_optimization"]["overlap_comm"] == false);
}

TEST_CASE("the checks hold DeepSpeed's own objections: the keys its readers take, its batch and pipeline checks")
{
  const nlohmann::json good = {{"train_batch_size", 64},
                               {"train_micro_batch_size_per_gpu", 2},
                               {"gradient_accumulation_steps", 4},
                               {"bf16", {{"enabled", true}}},
                               {"zero_optimization", {{"stage", 1}, {"reduce_bucket_size", 500000000}}}};
  CHECK(deepspeed_objections(good, 16, 2).empty()); // 8 replicas of 2 stages
  auto objections = [&](const nlohmann::json& patch, int world = 16, int stages = 2) {
    nlohmann::json config = good;
    if (!patch.is_null()) // {}: the configuration as it is
      config.merge_patch(patch);
    std::string all;
    for (const std::string& s : deepspeed_objections(config, world, stages))
      all += s + "\n";
    return all;
  };
  CHECK(objections({{"zero_optimization", {{"overlap_com", true}}}}).find("overlap_com: not a key") != std::string::npos);
  CHECK(objections({{"train_batch", 64}}).find("train_batch: not a key") != std::string::npos);
  CHECK(objections({{"zero_optimization", {{"stage", 4}}}}).find("is not enum:0,1,2,3") != std::string::npos);
  CHECK(objections({{"zero_optimization", {{"reduce_bucket_size", 5e8}}}}).find("is not int") != std::string::npos);
  CHECK(objections({{"bf16", {{"enabled", "yes"}}}}).find("is not bool") != std::string::npos);
  CHECK(objections({}, 32, 2).find("runtime/config.py:882") != std::string::npos);
  CHECK(objections({{"fp16", {{"enabled", true}}}}).find("runtime/config.py:782") != std::string::npos);
  CHECK(objections({{"zero_optimization", {{"stage", 2}}}}).find("pipe/engine.py:78") != std::string::npos);
  CHECK(objections({{"communication_data_type", "fp8"}}).find("runtime/config.py:207") != std::string::npos);
  // The old "bfloat16" section is still read, and the communication dtype in any case.
  CHECK(objections({{"bf16", nullptr}, {"bfloat16", {{"enabled", true}}}}).empty());
  CHECK(objections({{"communication_data_type", "FP32"}}).empty());
}
