#include "launch/megatron_deepspeed_args.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"
#include "framework_checks.hpp"
#include "models/workload.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

/// A case simulated under Megatron-DeepSpeed, its stages where GPTModelPipe puts them.
ExportCase mds_case(int tp, int pp, int dp, int micro_batch = 2, int grad_accum = 4)
{
  ExportCase c(tp, pp, dp, micro_batch, grad_accum);
  c.plan.framework = strategies::framework_defaults(strategies::Framework::megatron_deepspeed);
  c.plan.dtype     = Dtype::bf16;
  int layer        = 1; // past the embedding
  for (int s = 0; s < pp; ++s) {
    c.plan.stage_starts[s] = s == 0 ? 0 : layer;
    layer += gpt_model_pipe_blocks(24, pp, true)[s];
  }
  return c;
}

std::vector<ExportFile> files_of(const ExportCase& c)
{
  return export_plan(c.inputs(), ExportFormat::megatron_deepspeed);
}

} // namespace

TEST_CASE("partition_balanced is DeepSpeed v0.17.4's, ties broken as its dynamic programme breaks them")
{
  // Expected values: deepspeed/runtime/utils.py:562-621 run on these weights.
  CHECK(partition_balanced({3, 1, 4, 1, 5, 9, 2, 6}, 3) == std::vector<int>{0, 5, 6, 8});
  CHECK(partition_balanced({1, 1, 1}, 5) == std::vector<int>{0, 1, 2, 3, 3, 3}); // partition_uniform's edge case
  CHECK(partition_balanced({0, 0, 0, 0}, 2) == std::vector<int>{0, 3, 4});
  // GPTModelPipe's 'type:transformer': only the blocks weigh.
  CHECK(gpt_model_pipe_blocks(24, 4, true) == std::vector<int>{6, 6, 6, 6});
  CHECK(gpt_model_pipe_blocks(5, 2, true) == std::vector<int>{3, 2});
  CHECK(gpt_model_pipe_blocks(7, 3, true) == std::vector<int>{3, 2, 2});
  CHECK(gpt_model_pipe_blocks(10, 4, false) == std::vector<int>{3, 3, 2, 2});
  CHECK(gpt_model_pipe_blocks(13, 3, true) == std::vector<int>{5, 4, 4});
  CHECK(gpt_model_pipe_blocks(24, 5, true) == std::vector<int>{5, 5, 5, 5, 4});
}

TEST_CASE("Megatron-DeepSpeed arguments and DeepSpeed's config: degrees, batches, model, precision, ZeRO")
{
  ExportCase c     = mds_case(2, 2, 4);
  c.plan.recompute = true;
  const auto flags = launched_megatron_deepspeed(c.inputs());
  CHECK(flags.at("--tensor-model-parallel-size") == "2");
  CHECK(flags.at("--pipeline-model-parallel-size") == "2");
  CHECK(flags.count("--no-pipeline-parallel") == 0);
  CHECK(flags.count("--sequence-parallel") == 0); // Megatron-DeepSpeed's default, DeepSpeed partitions the sends
  CHECK(flags.at("--micro-batch-size") == "2");
  CHECK(flags.at("--global-batch-size") == "32");
  CHECK(flags.at("--num-layers") == "24");
  CHECK(flags.at("--make-vocab-size-divisible-by") == "128");
  CHECK(flags.count("--bf16") == 1);
  CHECK(flags.at("--recompute-granularity") == "full");
  CHECK(flags.at("--recompute-method") == "uniform");
  CHECK(flags.count("--deepspeed-activation-checkpointing") == 1);
  CHECK(flags.at("--zero-stage") == "0");
  CHECK(flags.at("--deepspeed_config") == "${HETSIM_EXPORT_DIR}/ds_config.json");
  const std::vector<ExportFile> files = files_of(c);
  CHECK(files[0].content.find("--deepspeed_config \"${HETSIM_EXPORT_DIR}/ds_config.json\"") != std::string::npos);
  CHECK(files[0].content.find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
  const auto config = nlohmann::json::parse(files[1].content);
  CHECK(config["train_batch_size"] == 32); // dp 4 = 16 / (tp 2 x pp 2)
  CHECK(config["bf16"]["enabled"] == true);
  CHECK(!config.contains("pipeline")); // pipe_partitioned and grad_partitioned by default, as simulated
}

TEST_CASE("Megatron-DeepSpeed without a pipeline: Megatron's GPTModel in DeepSpeed's engine, ZeRO-3 allowed")
{
  ExportCase c               = mds_case(4, 1, 4);
  c.plan.zero_stage          = 3;
  c.plan.selective_recompute = true;
  c.plan.sequence_parallel   = true;
  const auto flags           = launched_megatron_deepspeed(c.inputs());
  CHECK(flags.count("--no-pipeline-parallel") == 1);
  CHECK(flags.at("--zero-stage") == "3");
  CHECK(flags.at("--recompute-granularity") == "selective");
  CHECK(flags.count("--sequence-parallel") == 1);
  CHECK(files_of(c)[0].content.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos);
  CHECK(nlohmann::json::parse(files_of(c)[1].content)["zero_optimization"]["stage"] == 3);
}

TEST_CASE("sequence-parallel shards cross stages whole: DeepSpeed's pipe_partitioned off, or refused")
{
  ExportCase c             = mds_case(2, 2, 4);
  c.plan.sequence_parallel = true;
  CHECK_THROWS_WITH_AS(files_of(c), doctest::Contains("best.json: sequence_parallel: true with partitioned sends"),
                       InputError);
  c.plan.framework.partitioned_sends = false;
  launched_megatron_deepspeed(c.inputs());
  const auto config = nlohmann::json::parse(files_of(c)[1].content);
  CHECK(config["pipeline"]["pipe_partitioned"] == false);
  CHECK(config["pipeline"]["grad_partitioned"] == false);
}

TEST_CASE("what Megatron-DeepSpeed cannot run is refused in one line naming the plan field")
{
  auto refused = [](ExportCase c, const std::string& said) {
    CAPTURE(said);
    CHECK_THROWS_WITH_AS(files_of(c), doctest::Contains(said.c_str()), InputError);
  };
  ExportCase c = mds_case(2, 2, 4);
  {
    ExportCase d        = c;
    d.plan.stage_starts = {0, 14};
    refused(d, "best.json: stage_starts: blocks per stage 13,11: Megatron-DeepSpeed's GPTModelPipe places them by "
               "partition_method 'type:transformer' (DeepSpeed's partition_balanced), 12,12");
  }
  {
    ExportCase d      = c;
    d.plan.zero_stage = 2;
    refused(d, "best.json: zero_stage: 2 with pp 2");
  }
  {
    ExportCase d    = c;
    d.plan.schedule = strategies::PipelineSchedule::zero_bubble;
    refused(d, "best.json: schedule: zero_bubble");
  }
  {
    ExportCase d          = mds_case(1, 4, 4);
    d.plan.virtual_stages = 2;
    d.plan.stage_starts   = strategies::uniform_stage_starts(26, 8);
    refused(d, "best.json: virtual_stages: 2");
  }
  {
    ExportCase d                    = c;
    d.plan.framework.blocking_sends = false;
    refused(d, "best.json: framework.blocking_sends: false");
  }
  {
    ExportCase d                          = c;
    d.plan.framework.sends_attention_mask = true;
    refused(d, "best.json: framework.sends_attention_mask: true");
  }
  {
    ExportCase d     = c;
    d.plan.framework = strategies::framework_defaults(strategies::Framework::deepspeed);
    refused(d, "best.json: framework: deepspeed");
  }
  // DeepSpeed's own export points tensor parallelism here.
  ExportCase ds     = c;
  ds.plan.framework = strategies::framework_defaults(strategies::Framework::deepspeed);
  CHECK_THROWS_WITH_AS(export_plan(ds.inputs(), ExportFormat::deepspeed),
                       doctest::Contains("--format megatron-deepspeed"), InputError);
}

TEST_CASE("a Hugging Face model Megatron-DeepSpeed cannot build is refused naming the config's own model type")
{
  const std::filesystem::path fixtures = std::filesystem::path(HETSIM_SOURCE_DIR) / "tests/models/data/hf";
  auto refused = [&](const std::string& config, const std::string& said) {
    ExportCase c = mds_case(1, 1, 16);
    c.workload   = models::load_workload((fixtures / config).string());
    CAPTURE(config);
    CHECK_THROWS_WITH_AS(files_of(c), doctest::Contains(said.c_str()), InputError);
  };
  // Both read as the llama family; the message names what the file says.
  refused("qwen2-7b.json", "model_type: qwen2's biases on the query, key and value alone");
  refused("mixtral-8x7b.json", "model_type: mixtral is a mixture of experts");
  refused("qwen3-8b.json", "model_type: qwen3's norms on the queries and keys have no");
}

TEST_CASE("the checks hold Megatron-DeepSpeed's own objections: its parser's list and validate_args, one rule at a "
          "time")
{
  // A launch Megatron-DeepSpeed accepts: 16 processes, tp 2 x pp 2 x dp 4.
  const std::vector<Argument> good = {{"--tensor-model-parallel-size", "2"},
                                      {"--pipeline-model-parallel-size", "2"},
                                      {"--micro-batch-size", "2"},
                                      {"--global-batch-size", "32"},
                                      {"--num-layers", "24"},
                                      {"--hidden-size", "1024"},
                                      {"--num-attention-heads", "16"},
                                      {"--seq-length", "1024"},
                                      {"--max-position-embeddings", "1024"},
                                      {"--bf16", ""},
                                      {"--zero-stage", "1"},
                                      {"--deepspeed", ""},
                                      {"--deepspeed_config", "ds_config.json"}};
  CHECK(megatron_deepspeed_objections({good, 16, false}).empty());
  auto objections = [&](std::vector<Argument> change, int world = 16, bool one_connection = false) {
    std::string all;
    for (const std::string& s : megatron_deepspeed_objections({changed(good, change), world, one_connection}))
      all += s + "\n";
    return all;
  };
  auto fires = [&](std::vector<Argument> change, const std::string& rule, int world = 16) {
    CAPTURE(rule);
    CHECK(objections(change, world).find(rule) != std::string::npos);
  };
  fires({{"--use-custom-fsdp", ""}}, "not an argument"); // Megatron-Core's, not Megatron-DeepSpeed's
  fires({{"--num-query-groups", "4"}}, "not an argument");         // its GQA is --num-key-value-heads
  fires({{"--micro-batch-size", "two"}}, "converts it with int");
  fires({{"--normalization", "RMSNorm"}}, "not one of its choices"); // lower case here
  fires({{"--bf16", "1"}}, "takes no value");
  std::vector<Argument> twice = good;
  twice.push_back({"--bf16", ""});
  CHECK(megatron_deepspeed_objections({twice, 16, false}).front().find("given twice") != std::string::npos);
  fires({{"--tensor-model-parallel-size", "3"}}, "arguments.py:75", 20);
  fires({{"--no-pipeline-parallel", ""}}, "arguments.py:95");
  fires({}, "arguments.py:104", 18);
  fires({{"--micro-batch-size", "0"}}, "arguments.py:165");
  fires({{"--global-batch-size", "0"}}, "arguments.py:171");
  fires({{"--global-batch-size", "36"}}, "microbatches.py:64");
  fires({{"--num-layers-per-virtual-pipeline-stage", "6"}}, "arguments.py:173");
  fires({{"--fp16", ""}}, "arguments.py:188");
  fires({{"--hidden-size", "-"}}, "arguments.py:283");
  fires({{"--num-attention-heads", "15"}}, "arguments.py:299");
  fires({{"--seq-length", "2048"}}, "arguments.py:311");
  fires({{"--recompute-granularity", "selective"}, {"--recompute-method", "uniform"}}, "arguments.py:380");
  fires({{"--tensor-model-parallel-size", "1"}, {"--sequence-parallel", ""}}, "arguments.py:388");
  fires({{"--sequence-parallel", ""}}, "arguments.py:406");
  fires({{"--num-key-value-heads", "5"}}, "arguments.py:446");
  fires({{"--num-attention-heads", "15"}, {"--kv-channels", "64"}}, "transformer.py:562");
  fires({{"--num-key-value-heads", "1"}}, "transformer.py:566");
  fires({{"--deepspeed", "-"}}, "pretrain_gpt.py:51");
  fires({{"--zero-stage", "2"}}, "pipe/engine.py:78");
}
