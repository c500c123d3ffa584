#include "launch/megatron_args.hpp"
#include "launch/plan_export.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"
#include "framework_checks.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

TEST_CASE("Megatron-LM arguments carry the plan's degrees, batches, precision, recompute and model")
{
  ExportCase c(2, 2, 4, 2, 4);
  c.cluster         = strategies::testing::make_cluster(4, 4, strategies::testing::a100()); // bf16 needs Ampere
  c.plan.recompute  = true;
  c.plan.zero_stage = 1;
  c.plan.dtype      = Dtype::bf16;
  auto flags        = launched_megatron(c.inputs());
  CHECK(flags["--tensor-model-parallel-size"] == "2");
  CHECK(flags["--pipeline-model-parallel-size"] == "2");
  CHECK(flags.count("--sequence-parallel") == 1); // as simulated: activations and sends split over tp
  CHECK(flags["--micro-batch-size"] == "2");
  CHECK(flags["--global-batch-size"] == "32"); // 2 sequences x 4 micro-batches x 4 replicas
  CHECK(flags["--num-layers"] == "24");
  CHECK(flags["--hidden-size"] == "1024");
  CHECK(flags["--ffn-hidden-size"] == "4096");
  CHECK(flags.count("--hidden-dropout") == 0); // GPT trains with dropout: Megatron-LM's own 0.1
  CHECK(flags["--seq-length"] == "1024");
  CHECK(flags.count("--bf16") == 1);
  CHECK(flags["--recompute-granularity"] == "full");
  CHECK(flags.count("--use-distributed-optimizer") == 1);
  CHECK(flags.count("--group-query-attention") == 0); // GPT-2 has as many key/value heads as heads
  // 26 layers over 2 stages: 13 + 13, i.e. embedding + 12 blocks and 12 blocks + head: Megatron's even split.
  CHECK(flags.count("--pipeline-model-parallel-layout") == 0);
}

TEST_CASE("context parallelism: its degree and the ring exchange as simulated, the global batch over replicas")
{
  ExportCase c(2, 1, 8); // 16 devices: tp 2 x 8 data-parallel ranks, that is cp 2 x 4 replicas
  c.plan.cp  = 2;
  auto flags = launched_megatron(c.inputs());
  CHECK(flags["--context-parallel-size"] == "2");
  CHECK(flags["--cp-comm-type"] == "p2p");
  CHECK(flags["--global-batch-size"] == "32"); // 2 sequences x 4 micro-batches x 4 replicas
}

TEST_CASE("an uneven stage split becomes a pipeline layout with every block once, embedding first, loss last")
{
  ExportCase c(1, 4, 4);
  // amp-like: 4, 9, 10 and 1 blocks, the last stage holding one block and the head.
  c.plan.stage_starts = {0, 5, 14, 24};
  const auto flags    = launched_megatron(c.inputs());
  REQUIRE(flags.count("--pipeline-model-parallel-layout") == 1);
  const std::string layout = flags.at("--pipeline-model-parallel-layout");
  CHECK(layout == "Et*4|t*9|t*10|t,L");
  const auto stages = layout_stages(layout);
  REQUIRE(stages.size() == 4);
  CHECK(stages[0] == "Etttt");
  CHECK(stages[3] == "tL");
  int blocks = 0;
  for (const auto& stage : stages)
    blocks += static_cast<int>(std::count(stage.begin(), stage.end(), 't'));
  CHECK(blocks == 24);

  SUBCASE("a stage holding only the head")
  {
    c.plan.stage_starts = {0, 9, 17, 25};
    CHECK(launched_megatron(c.inputs()).at("--pipeline-model-parallel-layout") == "Et*8|t*8|t*8|,L");
  }
}

TEST_CASE("what Megatron-LM cannot run is refused, naming the plan field")
{
  ExportCase c(1, 2, 8);
  SUBCASE("per-replica micro-batches")
  {
    c.plan.micro_batch[3] = 3;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: micro_batch: replicas"),
                         InputError);
  }
  SUBCASE("ZeRO-2")
  {
    c.plan.zero_stage = 2;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: zero_stage: 2"), InputError);
  }
  SUBCASE("GPipe")
  {
    c.plan.schedule = strategies::PipelineSchedule::gpipe;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: schedule: gpipe"),
                         InputError);
  }
  SUBCASE("a plan simulated as DeepSpeed moves bytes")
  {
    c.plan.framework = strategies::framework_defaults(strategies::Framework::deepspeed);
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: framework: deepspeed"),
                         InputError);
  }
  SUBCASE("selective recompute as torchtitan's op-level policy, which Megatron-LM does not run")
  {
    c.plan.selective_recompute = true;
    c.plan.framework.selective = models::SelectivePolicy::every_other_product;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("best.json: framework.selective"),
                         InputError);
  }
  SUBCASE("gradient buckets on every stage, which Megatron-LM makes on pipeline rank 0's first chunk only")
  {
    c.plan.framework.buckets_first_chunk_only = false;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()),
                         doctest::Contains("best.json: framework.buckets_first_chunk_only: false"), InputError);
  }
  SUBCASE("a model costed with eager PyTorch's GeLU, which Megatron-LM fuses")
  {
    c.workload.shape->fused_gelu = false; // a tp that splits a head is refused earlier, by plan validation
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("model.json: fused_gelu: expected true"),
                         InputError);
  }
  SUBCASE("what Megatron-LM's flags cannot say: biases on the MLP alone or the head, an embedding norm, sinks")
  {
    c.workload.shape->biases   = false;
    c.workload.shape->mlp_bias = true; // GPT-J's fc_in and fc_out
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()),
                         doctest::Contains("model.json: mlp_bias: gpt2's biases on the MLP's projections alone"),
                         InputError);
    c.workload.shape->mlp_bias    = false;
    c.workload.shape->logits_bias = true;
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("bias on the output projection"),
                         InputError);
    c.workload.shape->logits_bias    = false;
    c.workload.shape->embedding_norm = true; // BLOOM's word_embeddings_layernorm
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("norm on the embeddings"), InputError);
    c.workload.shape->embedding_norm  = false;
    c.workload.shape->attention_sinks = true; // gpt-oss
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("attention sinks have no"), InputError);
  }
  SUBCASE("a layer list, which has no hidden size to give")
  {
    c.workload.shape.reset();
    CHECK_THROWS_WITH_AS(megatron_arguments(c.inputs()), doctest::Contains("model.json: a layer list"), InputError);
  }
}

TEST_CASE("virtual stages: even chunks as layers per virtual stage, uneven ones as a layout of pp x v stages")
{
  ExportCase c(1, 2, 8);
  c.plan.virtual_stages = 2;
  c.plan.stage_starts   = {0, 7, 13, 19}; // embedding + 6 blocks, 6, 6, 6 + head
  auto flags            = launched_megatron(c.inputs());
  CHECK(flags["--num-layers-per-virtual-pipeline-stage"] == "6");
  CHECK(flags.count("--pipeline-model-parallel-layout") == 0);

  c.plan.stage_starts = {0, 5, 14, 20}; // 4, 9, 6 and 5 blocks
  flags               = launched_megatron(c.inputs());
  CHECK(flags.count("--num-layers-per-virtual-pipeline-stage") == 0);
  // Megatron-Core puts layout stage i on pipeline rank i % pp: the plan's chunk order.
  CHECK(flags.at("--pipeline-model-parallel-layout") == "Et*4|t*9|t*6|t*5,L");
  CHECK(flags.count("--microbatch-group-size-per-virtual-pipeline-stage") == 0); // pp, Megatron's default

  c.plan.microbatch_group = 4;
  flags                   = launched_megatron(c.inputs());
  CHECK(flags.at("--microbatch-group-size-per-virtual-pipeline-stage") == "4");
}

TEST_CASE("one CUDA connection where Megatron-LM's validate_args asserts it: tensor or context parallelism")
{
  auto script = [](ExportCase& c) {
    for (const auto& file : launch::export_plan(c.inputs(), launch::ExportFormat::megatron))
      if (file.name == "megatron_args.sh")
        return file.content;
    return std::string();
  };
  ExportCase context(1, 1, 16); // 16 devices: cp 2 x 8 replicas, no tensor parallelism
  context.plan.cp = 2;
  CHECK(script(context).find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n") != std::string::npos);
  ExportCase tensor(2, 1, 8);
  CHECK(script(tensor).find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n") != std::string::npos);
  ExportCase data(1, 1, 16);
  CHECK(script(data).find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
}

TEST_CASE("a head width other than hidden / heads and query-key-value biases alone are said, as Megatron-LM needs")
{
  ExportCase c(1, 1, 16);
  auto shape     = models::testing::gpt_shape();
  shape.head_dim = 128; // Gemma-like: 16 heads of 128 on a hidden size of 1,024
  shape.biases   = false;
  shape.qkv_bias = true; // Qwen2-like
  c.workload     = models::build_transformer(shape);
  auto flags     = launched_megatron(c.inputs());
  CHECK(flags["--kv-channels"] == "128");
  CHECK(flags.count("--add-qkv-bias") == 1);
  CHECK(flags.count("--disable-bias-linear") == 1);

  ExportCase plain(1, 1, 16); // hidden / heads, biases everywhere: neither flag
  flags = launched_megatron(plain.inputs());
  CHECK(flags.count("--kv-channels") == 0);
  CHECK(flags.count("--add-qkv-bias") == 0);
  CHECK(flags.count("--qk-layernorm") == 0);

  ExportCase qwen3(1, 1, 16); // norms on each head's queries and keys: Megatron-Core's q_layernorm, k_layernorm
  auto normed    = models::testing::gpt_shape();
  normed.qk_norm = true;
  qwen3.workload = models::build_transformer(normed);
  CHECK(launched_megatron(qwen3.inputs()).count("--qk-layernorm") == 1);
}

TEST_CASE("the checks hold Megatron-LM's own objections: its parser's list, validate_args and its config classes")
{
  // A launch Megatron-LM core_v0.13.0 accepts: 16 processes, tp 2 x pp 2 x dp 4.
  const std::vector<Argument> good = {{"--tensor-model-parallel-size", "2"}, {"--pipeline-model-parallel-size", "2"},
                                      {"--sequence-parallel", ""},           {"--micro-batch-size", "2"},
                                      {"--global-batch-size", "32"},         {"--num-layers", "24"},
                                      {"--hidden-size", "1024"},             {"--num-attention-heads", "16"},
                                      {"--seq-length", "1024"},              {"--max-position-embeddings", "1024"},
                                      {"--bf16", ""}};
  CHECK(megatron_objections({good, 16, true}).empty());
  auto objections = [&](std::vector<Argument> change, int world = 16, bool one_connection = true) {
    const std::vector<std::string> said = megatron_objections({changed(good, change), world, one_connection});
    std::string all;
    for (const std::string& s : said)
      all += s + "\n";
    return all;
  };
  CHECK(objections({{"--use-megatron-fsdp", ""}}).find("not an argument") != std::string::npos); // 0.14's name
  CHECK(objections({{"--micro-batch-size", "two"}}).find("converts it with int") != std::string::npos);
  CHECK(objections({{"--recompute-granularity", "layer"}}).find("not one of its choices") != std::string::npos);
  CHECK(objections({{"--bf16", "1"}}).find("takes no value") != std::string::npos);
  CHECK(objections({}, 10).find("arguments.py:382") != std::string::npos);
  CHECK(objections({{"--global-batch-size", "36"}}).find("num_microbatches_calculator.py:340") != std::string::npos);
  CHECK(objections({{"--num-layers", "25"}}).find("arguments.py:561") != std::string::npos);
  CHECK(objections({{"--pipeline-model-parallel-layout", "t*12|t*12,L"}}).find("layout.py:90") != std::string::npos);
  CHECK(objections({{"--pipeline-model-parallel-layout", "Et*12|t*11,L"}}).find("layout.py:102") != std::string::npos);
  CHECK(objections({{"--pipeline-model-parallel-layout", "Et*8|t*8|t*8,L"}}).find("arguments.py:513") !=
        std::string::npos);
  CHECK(objections({{"--num-layers-per-virtual-pipeline-stage", "5"}}).find("arguments.py:540") != std::string::npos);
  CHECK(objections({{"--pipeline-model-parallel-size", "1"}, {"--num-layers-per-virtual-pipeline-stage", "6"},
                    {"--global-batch-size", "64"}})
            .find("arguments.py:567") != std::string::npos);
  CHECK(objections({{"--sequence-parallel", "-"}, {"--tensor-model-parallel-size", "1"}, {"--sequence-parallel", ""},
                    {"--global-batch-size", "64"}})
            .find("arguments.py:853") != std::string::npos);
  CHECK(objections({}, 16, false).find("arguments.py:872") != std::string::npos);
  CHECK(objections({{"--use-custom-fsdp", ""}, {"--use-distributed-optimizer", ""}, {"--no-gradient-accumulation-fusion", ""},
                    {"--data-parallel-sharding-strategy", "optim_grads_params"}})
            .find("arguments.py:659") != std::string::npos);
  CHECK(objections({{"--use-custom-fsdp", ""}}, 16, false).find("arguments.py:647") != std::string::npos);
  CHECK(objections({{"--context-parallel-size", "3"}, {"--global-batch-size", "8"}}, 48).find("arguments.py:776") !=
        std::string::npos);
  CHECK(objections({{"--seq-length", "2048"}}).find("arguments.py:788") != std::string::npos);
  CHECK(objections({{"--expert-model-parallel-size", "2"}, {"--num-experts", "3"}}).find("arguments.py:954") !=
        std::string::npos);
  CHECK(objections({{"--expert-model-parallel-size", "2"}, {"--num-experts", "4"}, {"--bf16", "-"}, {"--fp16", ""}})
            .find("arguments.py:957") != std::string::npos);
  CHECK(objections({{"--expert-model-parallel-size", "2"}, {"--num-experts", "4"}, {"--sequence-parallel", "-"}})
            .find("model_parallel_config.py:385") != std::string::npos);
  CHECK(objections({{"--recompute-granularity", "full"}}).find("transformer_config.py:786") != std::string::npos);
  CHECK(objections({{"--recompute-granularity", "selective"}, {"--recompute-method", "uniform"}})
            .find("arguments.py:843") != std::string::npos);
  CHECK(objections({{"--num-attention-heads", "15"}, {"--kv-channels", "64"}}).find("transformer_config.py:646") !=
        std::string::npos);
  CHECK(objections({{"--group-query-attention", ""}, {"--num-query-groups", "3"}}).find("transformer_config.py:661") !=
        std::string::npos);
  CHECK(objections({{"--max-position-embeddings", "-"}}).find("arguments.py:754") != std::string::npos);
}

TEST_CASE("rotary positions as the config gives them: base, share of a head, Llama 3's scaling; others refused")
{
  auto export_of = [](const nlohmann::json& config) {
    ExportCase c(1, 1, 16);
    c.workload = models::workload_from_json(config, "config.json");
    return launched_megatron(c.inputs());
  };
  // Llama-3.2-1B's config from the shared H100 runs: rope_theta 500,000, rope_scaling llama3 x 32.
  std::ifstream in(std::string(HETSIM_SOURCE_DIR) + "/tests/data/h100/inputs/llama-3.2-1b.json");
  nlohmann::json llama = nlohmann::json::parse(in);
  auto flags           = export_of(llama);
  CHECK(flags["--position-embedding-type"] == "rope");
  CHECK(flags["--rotary-base"] == "500000");
  CHECK(flags.count("--use-rope-scaling") == 1);
  CHECK(flags["--rope-scaling-factor"] == "32");
  CHECK(flags.count("--rotary-percent") == 0);
  // Llama trains without dropout, as priced (no masks kept): Megatron-LM's 0.1 defaults are overridden.
  CHECK(flags["--hidden-dropout"] == "0");
  CHECK(flags["--attention-dropout"] == "0");
  // Without them: Megatron-LM's defaults, nothing written.
  llama.erase("rope_scaling");
  llama["rope_theta"] = 10000;
  flags               = export_of(llama);
  CHECK(flags.count("--rotary-base") == 0);
  CHECK(flags.count("--use-rope-scaling") == 0);
  // Linear scaling by a whole factor; a fractional base or a scaling Megatron-LM's arguments do not take is refused.
  llama["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  CHECK(export_of(llama)["--rotary-seq-len-interpolation-factor"] == "4");
  llama["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 32.0}};
  CHECK_THROWS_WITH_AS(export_of(llama), doctest::Contains("model.json: rope_scaling: expected \"llama3\""),
                       InputError);
  llama.erase("rope_scaling");
  llama["rope_theta"] = 10000.5;
  CHECK_THROWS_WITH_AS(export_of(llama), doctest::Contains("model.json: rope_theta: expected a whole number"),
                       InputError);
}

TEST_CASE("an fp8 plan launches Transformer Engine's fp8 as priced; other frameworks' exports refuse it")
{
  ExportCase c(2, 2, 4, 2, 4);
  c.cluster          = strategies::testing::make_cluster(4, 4, *find_catalog_gpu("H100"));
  c.plan.dtype       = Dtype::bf16;
  c.plan.framework.fp8 = models::Fp8Recipe::tensorwise;
  auto flags         = launched_megatron(c.inputs());
  CHECK(flags.count("--bf16") == 1);
  CHECK(flags["--fp8-format"] == "hybrid");
  CHECK(flags["--fp8-recipe"] == "tensorwise");
  CHECK(flags.count("--fp8-param-gather") == 0);
  // Weights kept in fp8; MXFP8 (Blackwell) in E4M3 throughout, gathering them through the gradient buffer.
  c.plan.zero_stage                = 1;
  c.plan.framework.fp8_param_gather = true;
  flags                            = launched_megatron(c.inputs());
  CHECK(flags.count("--fp8-param-gather") == 1);
  CHECK(flags.count("--reuse-grad-buf-for-mxfp8-param-ag") == 0);
  c.cluster            = strategies::testing::make_cluster(4, 4, *find_catalog_gpu("B200"));
  c.plan.framework.fp8 = models::Fp8Recipe::mxfp8;
  flags                = launched_megatron(c.inputs());
  CHECK(flags["--fp8-format"] == "e4m3");
  CHECK(flags.count("--reuse-grad-buf-for-mxfp8-param-ag") == 1);
  c.plan.framework.fp8_param_gather = false;
  c.plan.framework.fp8 = models::Fp8Recipe::none;
  CHECK(launched_megatron(c.inputs()).count("--fp8-format") == 0);

  c.plan.framework.fp8  = models::Fp8Recipe::delayed;
  c.plan.framework.name = strategies::Framework::deepspeed;
  CHECK_THROWS_WITH_AS(export_plan(c.inputs(), ExportFormat::deepspeed),
                       doctest::Contains("best.json: dtype: fp8: its products are priced as Transformer Engine's fp8 "
                                         "linear layers under Megatron-LM (--fp8-format, --fp8-recipe); the DeepSpeed export "
                                         "does not write fp8 training"),
                       InputError);
}
