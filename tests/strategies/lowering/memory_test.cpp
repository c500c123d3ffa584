#include "strategies/lowering/memory.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/parameter_gather.hpp"

#include "core/error.hpp"
#include "costmodel/nccl_memory.hpp"
#include "fixtures.hpp"
#include "models/workload.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

constexpr double kMiB = units::kMiB;

/// 8 devices: tp 2, pp 2, dp 2 over 4 layers of 2^26 parameters (16 bytes of model state each = 1 GiB a layer),
/// 1 MiB boundary and 8 MiB saved activations per sample; micro-batch 2, 4 micro-batches.
struct Setup {
  Cluster cluster           = make_cluster(2, 4);
  models::Workload workload = make_workload(4, 1 << 26);
  Plan plan                 = make_plan(cluster, workload, 2, 2, 2, 2, 4);
  Problem problem           = make_problem(cluster, workload);

  std::vector<DeviceMemory> memory() const { return plan_memory(plan, problem); }
};

} // namespace

TEST_CASE("model states: weights, gradients and optimizer split by tensor parallelism and ZeRO")
{
  Setup setup;
  // Per device: 2 layers x 2^26 / tp 2 = 2^26 parameters.
  const double p = 1 << 26;
  struct Expected {
    int zero;
    double weights, gradients, optimizer;
  };
  for (const Expected& e : {Expected{0, 2 * p, 2 * p, 12 * p}, Expected{1, 2 * p, 2 * p, 6 * p},
                            Expected{2, 2 * p, p, 6 * p},
                            // ZeRO-3: a half of the weights plus the two largest layers gathered (2^25 each).
                            Expected{3, p + 2 * 2 * (p / 2), p, 6 * p}}) {
    CAPTURE(e.zero);
    setup.plan.zero_stage = e.zero;
    const auto memory     = setup.memory();
    REQUIRE(memory.size() == 8);
    for (const DeviceMemory& m : memory) {
      CHECK(m.parameter_bytes == e.weights);
      CHECK(m.gradient_bytes == e.gradients);
      CHECK(m.optimizer_bytes == e.optimizer);
      CHECK(m.workspace_bytes == 0);
      CHECK(m.capacity_bytes == 16 * units::kGiB);
      CHECK(m.gpu == "V100-SXM2-16GB");
    }
  }
  // Nothing to shard over with dp 1: ZeRO changes nothing.
  Cluster four = make_cluster(1, 4);
  Plan plan    = make_plan(four, setup.workload, 2, 2, 1, 2, 4);
  plan.zero_stage = 3;
  const auto memory = plan_memory(plan, make_problem(four, setup.workload));
  CHECK(memory[0].parameter_bytes == 2 * p);
  CHECK(memory[0].optimizer_bytes == 12 * p);
}

TEST_CASE("fp32 keeps 4-byte weights and gradients and no separate master copy")
{
  Setup setup;
  setup.plan.dtype = Dtype::fp32;
  const double p   = 1 << 26;
  const auto m     = setup.memory()[0];
  CHECK(m.parameter_bytes == 4 * p);
  CHECK(m.gradient_bytes == 4 * p);
  CHECK(m.optimizer_bytes == 8 * p);
  // Activations are twice the 16-bit figure: 4 MiB x 2 layers x micro-batch 2 x 2 in flight x 2.
  CHECK(m.activation_bytes == 64 * kMiB);
}

TEST_CASE("activations follow the micro-batches in flight")
{
  Setup setup;
  // Saved activations per device: 8 MiB / tp 2 = 4 MiB per sample and layer; 2 layers; micro-batch 2.
  SUBCASE("1F1B keeps min(grad_accum, pp - stage) micro-batches")
  {
    const auto memory = setup.memory();
    CHECK(memory[setup.plan.device(0, 0, 0)].activation_bytes == 4 * kMiB * 2 * 2 * 2);
    CHECK(memory[setup.plan.device(1, 1, 1)].activation_bytes == 4 * kMiB * 2 * 2 * 1);
  }
  SUBCASE("GPipe keeps all of them")
  {
    setup.plan.schedule = PipelineSchedule::gpipe;
    const auto memory   = setup.memory();
    CHECK(memory[setup.plan.device(0, 0, 0)].activation_bytes == 4 * kMiB * 2 * 2 * 4);
    CHECK(memory[setup.plan.device(1, 0, 1)].activation_bytes == 4 * kMiB * 2 * 2 * 4);
  }
  SUBCASE("1F1B with fewer micro-batches than stages")
  {
    setup.plan.grad_accum = {1, 1};
    CHECK(setup.memory()[0].activation_bytes == 4 * kMiB * 2 * 2 * 1);
  }
  SUBCASE("recompute keeps layer boundaries plus one layer's saved activations")
  {
    setup.plan.recompute = true;
    // Boundary 1 MiB / tp 2 per layer; stage 0: (0.5 MiB x 2 layers x 2 in flight + 4 MiB) x micro-batch 2.
    const auto memory = setup.memory();
    CHECK(memory[0].activation_bytes == (0.5 * kMiB * 2 * 2 + 4 * kMiB) * 2);
    CHECK(memory[setup.plan.device(1, 0, 0)].activation_bytes == (0.5 * kMiB * 2 * 1 + 4 * kMiB) * 2);
  }
  SUBCASE("replicas with larger micro-batches need more")
  {
    setup.plan.micro_batch = {2, 6};
    const auto memory      = setup.memory();
    CHECK(memory[setup.plan.device(0, 1, 0)].activation_bytes ==
          3 * memory[setup.plan.device(0, 0, 0)].activation_bytes);
  }
}

TEST_CASE("capacity is the device memory, or the problem's limit when lower")
{
  Setup setup;
  CHECK(setup.problem.memory_capacity(0) == 16 * units::kGiB);
  setup.problem.memory_limit_bytes = 12 * units::kGiB;
  CHECK(setup.problem.memory_capacity(3) == 12 * units::kGiB);
  setup.problem.memory_limit_bytes = 40 * units::kGiB;
  CHECK(setup.problem.memory_capacity(3) == 16 * units::kGiB);
}

TEST_CASE("check_memory names the device with the largest overflow")
{
  Setup setup;
  CHECK_NOTHROW(check_memory(setup.memory()));

  // 4 GiB layers: 2 layers / tp 2 = 2^28 parameters, 16 bytes each = 4 GiB of model states per device.
  setup.workload = make_workload(4, 1 << 28);
  setup.plan.micro_batch = {2, 64};
  auto memory = setup.memory();
  // Replica 1 on stage 0 keeps the most activations: 4 MiB x 2 layers x 64 x 2 in flight = 1 GiB.
  const int worst = setup.plan.device(0, 1, 0);
  CHECK(memory[worst].activation_bytes == units::kGiB);
  // Framework: 0.5 GiB context, 32 MiB cuBLAS workspace, and NCCL's buffers for its 3 communicators (tp, dp and
  // the pipeline neighbour). Transient: 10% of the activations (this layer list has no operators for the rest).
  const auto& p        = setup.plan;
  const double nccl    = costmodel::nccl_communicator_bytes(setup.cluster, {p.device(0, 1, 0), p.device(0, 1, 1)},
                                                            costmodel::NcclUse::collectives) +
                      costmodel::nccl_communicator_bytes(setup.cluster, {p.device(0, 0, 0), p.device(0, 1, 0)},
                                                         costmodel::NcclUse::collectives) +
                      costmodel::nccl_communicator_bytes(setup.cluster, {p.device(0, 1, 0), p.device(1, 1, 0)},
                                                         costmodel::NcclUse::point_to_point);
  CHECK(nccl > 3 * 9 * kMiB); // at least one channel of LL, LL128 and Simple buffers each
  CHECK(memory[worst].nccl.total == doctest::Approx(nccl));
  CHECK(memory[worst].nccl.pipeline > 0);
  CHECK(memory[worst].nccl.experts == 0);
  CHECK(memory[worst].framework_bytes == doctest::Approx(0.5 * units::kGiB + 32 * kMiB + nccl));
  // A plan that gives communicator_buffer_mib takes that for each communicator instead.
  setup.plan.framework.communicator_buffer_bytes = 128 * kMiB;
  CHECK(setup.memory()[worst].framework_bytes == doctest::Approx(0.5 * units::kGiB + 32 * kMiB + 3 * 128 * kMiB));
  setup.plan.framework.communicator_buffer_bytes.reset();
  memory = setup.memory();
  CHECK(memory[worst].transient_bytes == doctest::Approx(0.1 * units::kGiB));
  // A workspace the user gives replaces the framework's buffers.
  setup.problem.workspace_bytes = 11.5 * units::kGiB;
  memory = setup.memory();
  CHECK_THROWS_WITH_AS(check_memory(memory),
                       ("plan does not fit: device " + std::to_string(worst) +
                        " (V100-SXM2-16GB) needs 16.6 GiB of 16 GiB (0.60 GiB over), most of it workspace: "
                        "parameters 0.50 GiB, gradients 0.50 GiB, optimizer 3 GiB, activations 1 GiB, "
                        "framework 0 GiB, transient 0.10 GiB, workspace 11.5 GiB; 7 other devices are over too")
                           .c_str(),
                       InfeasiblePlan);
}

TEST_CASE("the framework's transient buffers: the loss's fp32 logit gradient, attention score gradients, the step")
{
  const models::Workload gpt = models::build_transformer(models::testing::gpt_shape(4));
  const Cluster cluster      = make_cluster(1, 2);
  Plan plan                  = make_plan(cluster, gpt, 1, 2, 1, 2, 4);
  const Problem problem      = make_problem(cluster, gpt);
  const auto memory          = plan_memory(plan, problem);
  const double s = 1024, v = 50257, a = 16, mb = 2;
  // The last stage holds the loss: its fp32 logit gradient (4sv per sample) outgrows the score gradients (4as^2).
  const double loss = 4 * s * v * mb, scores = 4 * a * s * s * mb;
  REQUIRE(loss > scores);
  CHECK(memory[1].transient_bytes == doctest::Approx(0.1 * memory[1].activation_bytes + loss));
  // The first stage has only blocks: one attention's score gradients at a time, unless the optimizer step's fp32
  // gradient copy (4 bytes per parameter, activations freed) is larger.
  const double step = 4 * (gpt.layers[0].params + gpt.layers[1].params + gpt.layers[2].params);
  CHECK(memory[0].transient_bytes ==
        doctest::Approx(std::max(0.1 * memory[0].activation_bytes + scores, step - memory[0].activation_bytes)));
  // Gradients reduced in fp32 need no fp32 copy at the step.
  plan.framework.fp32_gradient_reduction = true;
  CHECK(plan_memory(plan, problem)[0].transient_bytes ==
        doctest::Approx(0.1 * memory[0].activation_bytes + scores));
}

TEST_CASE("DeepSpeed's ZeRO tutorial: GPT-2 1.5B on eight 32 GB V100 runs out of memory without ZeRO, fits with "
          "ZeRO-1")
{
  // deepspeed.ai/tutorials/zero (docs/_tutorials/zero.md): Megatron-LM GPT-2 with 48 layers, hidden 1600, 16
  // heads, batch 1 per GPU, data parallel over 8 V100-SXM3 32 GB, on the launch script ds_pretrain_gpt2.sh
  // (DeepSpeedExamples Megatron-LM/scripts: sequence 1024, --checkpoint-activations, --fp16). "Training this
  // model without ZeRO fails with an out-of-memory (OOM) error"; with ZeRO stage 1 it trains.
  const GpuSpec* v100_32 = find_catalog_gpu("V100-SXM2-32GB");
  REQUIRE(v100_32 != nullptr);
  const Cluster cluster = make_cluster(1, 8, *v100_32);
  const models::Workload gpt2_xl = models::workload_from_json(
      nlohmann::json{{"model_type", "gpt2"}, {"n_embd", 1600}, {"n_head", 16}, {"n_layer", 48}, {"n_positions", 1024},
                     {"vocab_size", 50257}, {"seq_len", 1024}},
      "gpt2-1.5b.json");
  Plan plan          = make_plan(cluster, gpt2_xl, 1, 1, 8, 1, 1);
  plan.dtype         = Dtype::fp16;
  plan.recompute     = true;
  plan.framework     = framework_defaults(Framework::deepspeed);
  const Problem problem = make_problem(cluster, gpt2_xl);
  // Without ZeRO the step's two fp32 copies of the gradients (FP16_Optimizer.step) come on top of 16 bytes of
  // model state per parameter.
  plan.zero_stage = 0;
  CHECK_THROWS_AS(check_memory(plan_memory(plan, problem)), InfeasiblePlan);
  // The tutorial: "the Adam optimizer states for the model consume 18GB", 2.25 GB per device with ZeRO-1.
  CHECK(plan_memory(plan, problem)[0].optimizer_bytes == doctest::Approx(12 * gpt2_xl.total_params()));
  plan.zero_stage = 1;
  const auto sharded = plan_memory(plan, problem);
  CHECK_NOTHROW(check_memory(sharded));
  CHECK(sharded[0].optimizer_bytes == doctest::Approx(12 * gpt2_xl.total_params() / 8));
}

TEST_CASE("Megatron-LM with bf16 keeps fp32 gradients; DeepSpeed's ZeRO optimizer keeps them in bf16; its "
          "BF16_Optimizer keeps both and shards its fp32 states without ZeRO")
{
  Setup setup;
  setup.cluster    = make_cluster(2, 4, a100()); // bf16 needs Ampere
  setup.plan.dtype = Dtype::bf16;
  const double p   = 1 << 26; // per device
  CHECK(setup.memory()[0].gradient_bytes == 4 * p);
  CHECK(setup.memory()[0].optimizer_bytes == 12 * p);
  setup.plan.framework  = framework_defaults(Framework::deepspeed);
  setup.plan.zero_stage = 1;
  CHECK(setup.memory()[0].gradient_bytes == 2 * p);
  CHECK(setup.memory()[0].optimizer_bytes == 12 * p / 2);
  setup.plan.framework.fp32_gradient_reduction = true; // reduced in fp32, kept in bf16
  CHECK(setup.memory()[0].gradient_bytes == 2 * p);
  // data_types.grad_accum_dtype fp32 at ZeRO-1, and DeepSpeed's own choice at ZeRO-0: the BF16_Optimizer.
  setup.plan.framework                            = framework_defaults(Framework::deepspeed);
  setup.plan.framework.fp32_gradient_accumulation = true;
  const DeviceMemory zero1 = setup.memory()[0];
  CHECK(zero1.gradient_bytes == (2 + 4) * p);
  CHECK(zero1.optimizer_bytes == 12 * p / 2);
  setup.plan.framework  = framework_defaults(Framework::deepspeed);
  setup.plan.zero_stage = 0;
  const DeviceMemory zero0 = setup.memory()[0];
  CHECK(zero0.gradient_bytes == (2 + 4) * p);
  CHECK(zero0.optimizer_bytes == 12 * p / 2);
  CHECK(zero0.parameter_bytes == 2 * p);
  // At the step its all-reduce flattens the fp32 gradients and casts them to bf16: 6 bytes per parameter of a
  // bucket, all of this device's 2^26 here.
  CHECK(zero0.transient_bytes >= 6 * p - zero0.activation_bytes);
  // DeepSpeed's ZeRO-1/2 copy gradients into a contiguous bucket of reduce_bucket_size (5e8) 16-bit elements, two
  // with overlap_comm; the BF16_Optimizer has none.
  setup.plan.zero_stage = 1;
  const double zero1_framework = setup.memory()[0].framework_bytes;
  setup.plan.framework.reduce_during_backward = true;
  CHECK(setup.memory()[0].framework_bytes - zero1_framework == doctest::Approx(5e8 * 2));
  CHECK(zero1_framework - zero0.framework_bytes == doctest::Approx(5e8 * 2));
  setup.plan.framework  = framework_defaults(Framework::deepspeed);
  setup.plan.zero_stage = 0;
  // On one device an eager loop's gradients appear during the backward (zero_grad sets them to None); the
  // BF16_Optimizer's are zeroed and kept, its fp32 copy beside them, so all 6 bytes count at the peak.
  {
    const models::Workload gpt = strategies::run_by(models::build_transformer(models::testing::gpt_shape(4)),
                                                    framework_defaults(Framework::deepspeed), Dtype::bf16);
    const Cluster one          = make_cluster(1, 1, a100());
    Plan single                = make_plan(one, gpt, 1, 1, 1, 1, 1);
    single.dtype               = Dtype::bf16;
    single.framework           = framework_defaults(Framework::deepspeed);
    const Problem problem      = make_problem(one, gpt);
    CHECK(plan_memory(single, problem)[0].gradient_bytes == doctest::Approx(6 * gpt.total_params()));
  }
  // fp16 runs the FP16 optimizer: nothing of this.
  setup.cluster    = make_cluster(2, 4);
  setup.plan.dtype = Dtype::fp16;
  CHECK(setup.memory()[0].gradient_bytes == 2 * p);
  CHECK(setup.memory()[0].optimizer_bytes == 12 * p);
}

TEST_CASE("interleaved 1F1B keeps 1 + (p - 1) / (p v) times 1F1B's activations on the first stage")
{
  // Narayanan et al., SC'21 §2.2.2: interleaving holds more micro-batches in flight, each of a smaller chunk.
  const Cluster cluster           = make_cluster(1, 4);
  const models::Workload workload = make_workload(16);
  const Problem problem           = make_problem(cluster, workload);
  Plan plan                       = make_plan(cluster, workload, 1, 4, 1, 1, 8);
  const double one_f_one_b        = plan_memory(plan, problem)[0].activation_bytes;
  for (int chunks : {2, 4}) {
    CAPTURE(chunks);
    plan.virtual_stages = chunks;
    plan.stage_starts   = uniform_stage_starts(16, 4 * chunks);
    const auto memory   = plan_memory(plan, problem);
    CHECK(memory[0].activation_bytes == doctest::Approx(one_f_one_b * (1 + 3.0 / (4 * chunks))));
    // Every device holds a quarter of the parameters, as without chunks.
    CHECK(memory[3].parameter_bytes == doctest::Approx(memory[0].parameter_bytes));
  }
}

TEST_CASE("without sequence parallelism a tensor-parallel block keeps 10sbh of its 34sbh whole (Korthikanti eq. 2)")
{
  const int s = 256, h = 512;
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(4, h, 8, 1000, s));
  const models::Layer& block      = workload.layers[1];
  // Layer-norm inputs 4sbh, dropout masks 2sbh, the QKV and first MLP products' inputs 2sbh each.
  CHECK(block.replicated_saved_bytes_per_sample == doctest::Approx(10.0 * s * h));
  const Cluster cluster = make_cluster(1, 2, a100());
  Plan plan             = make_plan(cluster, workload, 2, 1, 1);
  double replicated     = 0;
  for (const auto& layer : workload.layers)
    replicated += layer.replicated_saved_bytes_per_sample;
  plan.sequence_parallel = true;
  const double split     = plan_memory(plan, make_problem(cluster, workload))[0].activation_bytes;
  plan.sequence_parallel = false;
  const double whole     = plan_memory(plan, make_problem(cluster, workload))[0].activation_bytes;
  CHECK(whole - split == doctest::Approx(replicated / 2));
}

TEST_CASE("selective recompute keeps a block's 34sbh and drops attention's 5as^2 (Korthikanti et al. 2022, sec. 5)")
{
  const double s = 256, h = 512, a = 8;
  const models::Workload workload = models::build_transformer(models::testing::gpt_shape(4, h, a, 1000, s));
  const models::Layer& block      = workload.layers[1];
  CHECK(block.saved_activation_bytes_per_sample == doctest::Approx(34 * s * h + 5 * a * s * s));
  CHECK(block.selective_saved_bytes_per_sample == doctest::Approx(34 * s * h));
  // The rerun is the two batched products' forward: 4 s^2 h FLOPs per sample.
  CHECK(block.selective_recompute_flops_per_sample == doctest::Approx(4 * s * s * h));
  const Cluster cluster = make_cluster(1, 1, a100());
  Plan plan             = make_plan(cluster, workload, 1, 1, 1);
  const double kept     = plan_memory(plan, make_problem(cluster, workload))[0].activation_bytes;
  plan.selective_recompute = true;
  const double selective   = plan_memory(plan, make_problem(cluster, workload))[0].activation_bytes;
  CHECK(kept - selective == doctest::Approx(4 * 5 * a * s * s));
}

TEST_CASE("Hugging Face's GPT-2 medium in fp32 on a 16 GB GPU: batch 1 at 1,024 tokens fits, batch 4 at 512 does "
          "not, once eager gelu_new keeps its intermediates")
{
  // Both runs use transformers' run_lm_finetuning.py of December 2019: fp32 (no --fp16), AdamW, no activation
  // checkpointing, GPT-2's gelu_new run op by op, block_size defaulting to the model's 1,024 positions.
  //  - fits: huggingface/transformers issue #2114, gpt2-medium at batch 1 on a 16 GB P100, "took almost the
  //    whole ram ~15gb";
  //  - does not: PR #2356 measured gpt2-medium at batch 4, sequence 512, at 23.36 GB.
  // The V100-SXM2-16GB holds as much as the P100.
  auto workload = [](int seq_len, bool fused_gelu) {
    std::ifstream file(std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/gpt2-medium.json");
    nlohmann::json config = nlohmann::json::parse(file);
    config["seq_len"]     = seq_len;
    config["fused_gelu"]  = fused_gelu;
    return models::workload_from_json(config, "gpt2-medium.json");
  };
  const Cluster cluster = make_cluster(1, 1);
  auto need = [&](const models::Workload& gpt2_medium, int micro_batch) {
    Plan plan      = make_plan(cluster, gpt2_medium, 1, 1, 1, micro_batch);
    plan.dtype     = Dtype::fp32;
    plan.framework = framework_defaults(Framework::fsdp);
    return plan_memory(plan, make_problem(cluster, gpt2_medium));
  };
  const auto issue_2114 = need(workload(1024, false), 1);
  CHECK_NOTHROW(check_memory(issue_2114));
  CHECK(issue_2114[0].total_bytes() > 13e9); // "almost the whole" 16 GB
  const auto pr_2356 = need(workload(512, false), 4);
  CHECK_THROWS_WITH_AS(check_memory(pr_2356), doctest::Contains("most of it activations"), InfeasiblePlan);
  // Not above what was measured, which also counts the caching allocator's reserve.
  CHECK(pr_2356[0].total_bytes() < 23.36e9);
  // The eager GeLU's three extra tensors of the MLP's width are what runs it out of memory: fused, it would fit.
  CHECK_NOTHROW(check_memory(need(workload(512, true), 4)));
}

TEST_CASE("a tied embedding under pipelining: the last stage holds its second copy with gradient and optimizer")
{
  const models::Workload gpt = models::build_transformer(models::testing::gpt_shape(4));
  const Cluster cluster      = make_cluster(1, 2);
  Plan plan                  = make_plan(cluster, gpt, 1, 2, 1, 1, 4);
  const Problem problem      = make_problem(cluster, gpt);
  const double copy          = 50257.0 * 1024; // DeepSpeed's TiedLayerSpec, Megatron-LM's output-layer weights
  double last = 0, first = 0;
  for (int l = 0; l < 3; ++l)
    first += gpt.layers[l].params;
  for (int l = 3; l < 6; ++l)
    last += gpt.layers[l].params;
  for (Framework name : {Framework::deepspeed, Framework::megatron}) {
    plan.framework    = framework_defaults(name);
    const auto memory = plan_memory(plan, problem);
    CHECK(memory[0].optimizer_bytes == doctest::Approx(12 * first));
    CHECK(memory[1].optimizer_bytes == doctest::Approx(12 * (last + copy)));
    CHECK(memory[1].parameter_bytes == doctest::Approx(2 * (last + copy)));
  }
  // Without the stages' all-reduce there is no second copy to keep equal.
  plan.framework.tied_embedding_all_reduce = false;
  CHECK(plan_memory(plan, problem)[1].optimizer_bytes == doctest::Approx(12 * last));
}

// Megatron-LM's own account of its memory, megatron/training/theoretical_memory_usage.py at core_v0.13.0 (commit
// c550cf6): model states of the most loaded shard, (L / pp blocks + the embedding) / tp parameters, at 18 bytes
// each, or 6 + 12 / dp with the distributed optimizer (l.151-183; the same table in docs/source/api-guide/
// dist_optimizer.md, which gives 20 and 4 + 16 / dp for fp16: the fp32 main gradients the step makes); the
// first stage's activations, with sequence parallelism and selective recompute, L blocks of sbh(18 + 4 ffn / h)
// (pp / pp micro-batches of L / pp blocks in flight), the embedding's input 8sb and dropout sbh per micro-batch in
// flight, all over tp (l.188-259).
TEST_CASE("GPT-3 175B under Megatron-LM: model states and first-stage activations as theoretical_memory_usage.py")
{
  const int layers = 96, h = 12288, heads = 96, vocab = 51200, s = 2048, tp = 8, pp = 8, dp = 4;
  models::TransformerShape shape = models::testing::gpt_shape(layers, h, heads, vocab, s);
  shape.fused_gelu               = true;
  const models::Workload workload = models::build_transformer(shape);
  const Cluster cluster = make_cluster(tp * pp * dp / 8, 8, a100());
  Plan plan             = make_plan(cluster, workload, tp, pp, dp, 1, 16);
  plan.stage_starts     = {0};
  for (int stage = 1; stage < pp; ++stage) // the embedding rides with the first stage's blocks
    plan.stage_starts.push_back(1 + stage * layers / pp);
  plan.dtype               = Dtype::bf16;
  plan.set_recompute(Recompute::selective);
  plan.sequence_parallel = true;
  const Problem problem  = make_problem(cluster, workload);

  // l.91-101 and l.115-120: a block's 2h(ffn + 2) + 2h^2 (1 + groups / heads), the tied embedding hV.
  const double block    = 2.0 * h * (4.0 * h + 2) + 2.0 * h * h * 2;
  const double shard    = (block * layers / pp + double(h) * vocab) / tp;
  const double sbh      = double(s) * h;
  const double expected = (sbh * (18 + 4 * 4) * layers + 8.0 * s * pp + sbh * pp) / tp;
  for (int zero : {0, 1}) { // --use-distributed-optimizer is Megatron's ZeRO-1
    CAPTURE(zero);
    plan.zero_stage       = zero;
    const DeviceMemory m  = plan_memory(plan, problem)[0];
    const double per_param = zero == 0 ? 18 : 6 + 12.0 / dp;
    // Position embeddings (s x h) and the blocks' norms and biases are HetSim's beyond the formula's count.
    CHECK((m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes) / (shard * per_param) ==
          doctest::Approx(1).epsilon(0.01));
    CHECK(m.activation_bytes / expected == doctest::Approx(1).epsilon(0.02));
  }
  // fp16: 20 bytes, or 4 + 16 / dp, counting the fp32 main gradients the step makes (the transient at the step).
  const Cluster v100s = make_cluster(tp * pp * dp / 8, 8);
  const Problem fp16_problem = make_problem(v100s, workload);
  plan.dtype = Dtype::fp16;
  plan.set_recompute(Recompute::full); // so that the step, not the backward, is the peak
  for (int zero : {0, 1}) {
    CAPTURE(zero);
    plan.zero_stage       = zero;
    const DeviceMemory m  = plan_memory(plan, fp16_problem)[0];
    const double at_step  = m.parameter_bytes + m.gradient_bytes + m.optimizer_bytes + m.transient_bytes +
                           m.activation_bytes; // the step's transient is net of the freed activations
    CHECK(at_step / (shard * (zero == 0 ? 20 : 4 + 16.0 / dp)) == doctest::Approx(1).epsilon(0.01));
  }
}

TEST_CASE("a GPU whose framework falls back to an attention that keeps its scores holds them")
{
  // Transformer Engine's fused attention needs sm80: on a V100 Megatron-LM's blocks keep the s x s scores.
  models::TransformerShape shape = models::testing::gpt_shape(2);
  shape.flash_attention          = true;
  shape.attention                = models::AttentionKernel::te_fused;
  const models::Workload workload = models::build_transformer(shape);
  auto activations = [&](const char* gpu, bool selective) {
    const Cluster cluster = make_cluster(1, 2, *find_catalog_gpu(gpu));
    Plan plan             = make_plan(cluster, workload, 1, 1, 2);
    plan.selective_recompute = selective;
    return plan_memory(plan, make_problem(cluster, workload))[0];
  };
  const double s = shape.seq_len, a = shape.heads;
  // Two blocks, one micro-batch of one sequence in flight: 5as^2 kept per block, 16-bit.
  CHECK(activations("V100", false).activation_bytes - activations("A100-80GB", false).activation_bytes ==
        doctest::Approx(2 * 5 * a * s * s));
  CHECK(activations("V100", false).transient_bytes > activations("A100-80GB", false).transient_bytes);
  // Selective recompute reruns the scores instead of keeping them.
  CHECK(activations("V100", true).activation_bytes == doctest::Approx(activations("A100-80GB", true).activation_bytes));
}

TEST_CASE("torchtitan's Llama 3.1 8B under FSDP on 8 and 128 H100: selective recompute as its op-level policy")
{
  // benchmarks/llama3_h100_202412_torchtitan.md at torchtitan 9dec370, Tables 1 and 3 ("FSDP", no compile, no
  // Float8): local batch 2 at 8,192 tokens, bf16, selective activation checkpointing (the op-level policy its
  // Llama 3 configs select), 82.4 GiB on 8 GPUs and 67.0 GiB on 128 ("Memory(GiB)", torch's peak reserved, on
  // 96 GB H100s; an 80 GB H100's figures here, whose capacity is not what is checked).
  std::ifstream file(std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/llama-3.1-8b.json");
  nlohmann::json config = nlohmann::json::parse(file);
  config["seq_len"]     = 8192;
  const models::Workload given = models::workload_from_json(config, "llama-3.1-8b.json");
  const GpuSpec* h100          = find_catalog_gpu("H100-SXM5-80GB");
  REQUIRE(h100 != nullptr);
  auto peak = [&](int nodes, models::SelectivePolicy policy) {
    const Cluster cluster         = make_cluster(nodes, 8, *h100);
    Plan plan                     = make_plan(cluster, given, 1, 1, 8 * nodes, 2, 1);
    plan.dtype                    = Dtype::bf16;
    plan.zero_stage               = 3;
    plan.selective_recompute      = true;
    plan.framework                = framework_defaults(Framework::fsdp);
    plan.framework.autocast       = false; // FSDP2's MixedPrecisionPolicy: bf16 parameters
    plan.framework.selective      = policy;
    const models::Workload llama  = run_by(given, plan.framework, plan.dtype);
    return plan_memory(plan, make_problem(cluster, llama))[0].total_bytes() / units::kGiB;
  };
  const auto op = models::SelectivePolicy::every_other_product;
  CHECK(peak(1, op) == doctest::Approx(82.4).epsilon(0.10));
  CHECK(peak(16, op) == doctest::Approx(67.0).epsilon(0.10));
  // The sharded model states are what the two differ by: 8 B parameters' 16 bytes over 8 ranks, not 128.
  CHECK(peak(1, op) - peak(16, op) == doctest::Approx(82.4 - 67.0).epsilon(0.15));
  // Megatron's policy, which keeps everything a flash-attention block saves, would have needed about twice.
  CHECK(peak(1, models::SelectivePolicy::core_attention) > 1.8 * 82.4);
}

namespace {

/// A GPT on 8 H100 (tp 2, pp 2, dp 2) in bf16, and the same model with its products in fp8 under `recipe`.
struct Fp8Case {
  explicit Fp8Case(models::Fp8Recipe recipe)
      : fp8(models::with_fp8(bf16, recipe, "test")), plan(make_plan(cluster, bf16, 2, 2, 2, 2, 4))
  {
    plan.dtype = Dtype::bf16;
  }
  const Cluster cluster       = make_cluster(2, 4, *find_catalog_gpu("H100"));
  const models::Workload bf16 = models::build_transformer(models::testing::gpt_shape());
  const models::Workload fp8;
  Plan plan;
  const Problem bf16_problem = make_problem(cluster, bf16), fp8_problem = make_problem(cluster, fp8);
};

} // namespace

TEST_CASE("fp8 keeps each fp8 weight's cached copy and transpose, and its products' inputs in one byte")
{
  Fp8Case c(models::Fp8Recipe::delayed);
  const models::Workload& fp8 = c.fp8;
  Plan& plan                  = c.plan;
  const DeviceMemory before   = plan_memory(plan, c.bf16_problem)[0];
  plan.framework.fp8          = models::Fp8Recipe::delayed;
  const DeviceMemory after    = plan_memory(plan, c.fp8_problem)[0];
  double fp8_params = 0; // device 0: stage 0's layers, a tensor-parallel half of each
  for (int l = plan.stage_starts[0]; l < plan.stage_end(0, static_cast<int>(fp8.layers.size())); ++l)
    for (const models::Operator& op : fp8.layers[l].operators)
      fp8_params += op.fp8 ? op.params / plan.tp : 0;
  REQUIRE(fp8_params > 0);
  CHECK(after.parameter_bytes == doctest::Approx(before.parameter_bytes + 2 * fp8_params));
  CHECK(after.activation_bytes < before.activation_bytes);
  CHECK(after.gradient_bytes == before.gradient_bytes);
}

TEST_CASE("weights kept in fp8 drop their 16-bit copy, and the distributed optimizer gathers them in one byte")
{
  Fp8Case c(models::Fp8Recipe::tensorwise);
  const models::Workload& fp8 = c.fp8;
  const Problem& fp8_problem  = c.fp8_problem;
  Plan& plan                  = c.plan;
  plan.zero_stage             = 1;
  const DeviceMemory plain    = plan_memory(plan, c.bf16_problem)[0];
  plan.framework.fp8         = models::Fp8Recipe::tensorwise;
  const DeviceMemory cached  = plan_memory(plan, fp8_problem)[0];
  plan.framework.fp8_param_gather = true;
  const DeviceMemory kept         = plan_memory(plan, fp8_problem)[0];
  // Row-wise and column-wise fp8 in place of the 16-bit weight: as many bytes as bf16 alone, less than beside it.
  CHECK(kept.parameter_bytes == doctest::Approx(plain.parameter_bytes));
  CHECK(kept.parameter_bytes < cached.parameter_bytes);
  CHECK(kept.gradient_bytes == cached.gradient_bytes);
  CHECK(kept.optimizer_bytes == cached.optimizer_bytes);

  // The gather after the step: one byte for each fp8 weight, two for the embedding, norms and biases.
  const auto ranges = plan.stage_ranges(0, static_cast<int>(fp8.layers.size()));
  double params = 0, fp8_params = 0;
  for (const auto& [first, end] : ranges)
    for (int l = first; l < end; ++l) {
      params += fp8.layers[l].params;
      for (const models::Operator& op : fp8.layers[l].operators)
        fp8_params += op.fp8 ? op.params : 0;
    }
  REQUIRE(fp8_params > 0.5 * params);
  CHECK(gathered_bytes_per_param(fp8.layers, ranges, plan) == doctest::Approx(2 - fp8_params / params));
  auto gathered = [&](const Plan& p) {
    double bytes = 0;
    for (const Task& task : lower(p, fp8_problem).tasks)
      if (task.kind == TaskKind::all_gather && task.stream == Stream::data_parallel && task.device == 0)
        bytes += task.bytes;
    return bytes;
  };
  const double in_fp8 = gathered(plan);
  plan.framework.fp8_param_gather = false;
  CHECK(gathered_bytes_per_param(fp8.layers, ranges, plan) == 2);
  CHECK(in_fp8 / gathered(plan) == doctest::Approx(1 - fp8_params / params / 2));
}
