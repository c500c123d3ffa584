#include "strategies/plan/plan_json.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;
using nlohmann::json;

namespace {

/// 8 devices (2 nodes of 4) and a 6-layer model.
struct Inputs {
  Cluster cluster           = make_cluster(2, 4);
  models::Workload workload = make_workload(6);

  Plan read(const json& plan) const { return plan_from_json(plan, "plan.json", cluster, workload); }
};

/// Checks that reading `plan` fails with a message naming the file, `path` and `expected`.
void check_rejected(const json& plan, const std::string& path, const std::string& expected)
{
  Inputs inputs;
  CAPTURE(plan.dump());
  try {
    inputs.read(plan);
    FAIL("accepted an invalid plan");
  } catch (const InputError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.rfind("plan.json: " + path + ": ", 0) == 0);
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

json base()
{
  return json{{"tp", 2}, {"pp", 2}, {"dp", 2}, {"micro_batch", 4}};
}

json with(json plan, const std::string& key, json value)
{
  plan[key] = std::move(value);
  return plan;
}

} // namespace

TEST_CASE("a minimal plan gets the documented defaults")
{
  Inputs inputs;
  const Plan plan = inputs.read(base());
  CHECK(plan.world_size() == 8);
  CHECK(plan.placement == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(plan.stage_starts == std::vector<int>{0, 3});
  CHECK(plan.micro_batch == std::vector<int>{4, 4});
  CHECK(plan.grad_accum == std::vector<int>{1, 1});
  CHECK(plan.zero_stage == 0);
  CHECK(plan.schedule == PipelineSchedule::one_f_one_b);
  CHECK_FALSE(plan.recompute);
  CHECK(plan.dtype == Dtype::fp16);
  CHECK(plan.collective_algorithm == CollectiveAlgorithm::ring);
  // Megatron-LM's 40 M-parameter buckets of fp16 gradients.
  CHECK(plan.bucket_bytes == 0);
  CHECK(plan.gradient_bucket_bytes() == 80e6);
  CHECK(plan.framework == framework_defaults(Framework::megatron));
  CHECK(plan.gradient_reduction_bytes() == 2);
  CHECK(plan.global_batch() == 8);
  CHECK(plan.device(1, 0, 1) == 5);
  CHECK(plan.stage_end(0, 6) == 3);
  CHECK(plan.stage_end(1, 6) == 6);
}

TEST_CASE("every field is read and plan_to_json round-trips")
{
  const Inputs inputs{make_cluster(2, 4, a100())}; // bf16 needs Ampere
  const json text = {{"tp", 1},
                     {"pp", 4},
                     {"dp", 2},
                     {"placement", {7, 6, 5, 4, 3, 2, 1, 0}},
                     {"stage_starts", {0, 1, 3, 4}},
                     {"micro_batch", {2, 6}},
                     {"grad_accum", {8, 4}},
                     {"zero_stage", 1},
                     {"schedule", "gpipe"},
                     {"recompute", true},
                     {"dtype", "bf16"},
                     {"collective_algorithm", "hierarchical"},
                     {"bucket_mib", 12.5},
                     {"seq_len", inputs.workload.seq_len},
                     {"description", "hand-written"}};
  const Plan plan = inputs.read(text);
  CHECK(plan.device(0, 0, 0) == 7);
  CHECK(plan.device(3, 1, 0) == 0);
  CHECK(plan.stage_starts == std::vector<int>{0, 1, 3, 4});
  CHECK(plan.micro_batch == std::vector<int>{2, 6});
  CHECK(plan.grad_accum == std::vector<int>{8, 4});
  CHECK(plan.global_batch() == 40);
  CHECK(plan.zero_stage == 1);
  CHECK(plan.schedule == PipelineSchedule::gpipe);
  CHECK(plan.recompute);
  CHECK(plan.dtype == Dtype::bf16);
  CHECK(plan.collective_algorithm == CollectiveAlgorithm::hierarchical);
  CHECK(plan.bucket_bytes == 12.5 * units::kMiB);
  CHECK(plan.seq_len == inputs.workload.seq_len);

  const json written = plan_to_json(plan);
  CHECK(written["schedule"] == "gpipe");
  CHECK(written["micro_batch"] == json({2, 6}));
  CHECK(inputs.read(written) == plan);
  CHECK(plan_to_json(inputs.read(written)) == written);

  // Uniform per-replica values are written as numbers.
  const Plan uniform = inputs.read(base());
  CHECK(plan_to_json(uniform)["micro_batch"] == 4);
  CHECK(inputs.read(plan_to_json(uniform)) == uniform);
}

TEST_CASE("a plan made for other sequences than the model's is refused, naming the option that loads them")
{
  const Inputs inputs;
  check_rejected(with(base(), "seq_len", inputs.workload.seq_len * 2), "seq_len",
                 "expected the model's " + std::to_string(inputs.workload.seq_len) +
                     " tokens per sequence (load the model at the plan's sequence length: --seq-len " +
                     std::to_string(inputs.workload.seq_len * 2) + ")");
}

TEST_CASE("global_batch derives grad_accum")
{
  Inputs inputs;
  const Plan plan = inputs.read(with(with(base(), "micro_batch", {1, 3}), "global_batch", 32));
  CHECK(plan.grad_accum == std::vector<int>{8, 8});
  CHECK(plan.global_batch() == 32);
  check_rejected(with(base(), "global_batch", 36), "global_batch", "expected a multiple of 8");
  check_rejected(with(with(base(), "global_batch", 32), "grad_accum", 4), "(top level)",
                 "either grad_accum or global_batch");
}

TEST_CASE("missing fields and wrong types name the file and the JSON path")
{
  check_rejected(json{{"tp", 2}, {"pp", 2}, {"dp", 2}}, "(top level)", "missing required field 'micro_batch'");
  check_rejected(json::array({1, 2}), "(top level)", "expected an object describing a plan");
  check_rejected(with(base(), "tp", "two"), "tp", "expected an integer, got string \"two\"");
  check_rejected(with(base(), "dp", 0), "dp", "expected a positive integer");
  check_rejected(with(base(), "micro_batch", "4"), "micro_batch", "expected a positive integer or an array of 2");
  check_rejected(with(base(), "micro_batch", {4, 0}), "micro_batch[1]", "expected a positive integer");
  check_rejected(with(base(), "recompute", 1), "recompute", "expected true, false, \"none\", \"selective\" or \"full\"");
  check_rejected(with(base(), "placement", {0, 1, 2, 3, 4, 5, 6, 7.5}), "placement[7]", "expected an integer");
  check_rejected(with(base(), "stage_starts", 3), "stage_starts", "expected an array of integers");
  check_rejected(with(base(), "bucket_mib", -1), "bucket_mib", "expected a positive number");
  check_rejected(with(base(), "bucket_mib", 0.001), "bucket_mib", "expected at least 0.0625 (64 KiB), got 0.001");
}

TEST_CASE("the framework sets how gradients are reduced and what a pipeline send carries; fields override")
{
  const Inputs inputs{make_cluster(2, 4, a100())}; // bf16 needs Ampere
  const Plan megatron_bf16 = inputs.read(with(base(), "dtype", "bf16"));
  CHECK(megatron_bf16.gradient_reduction_bytes() == 4); // fp32 main gradients
  CHECK(megatron_bf16.gradient_bucket_bytes() == 160e6);

  const Plan deepspeed = inputs.read(with(base(), "framework", "deepspeed"));
  CHECK(deepspeed.framework.name == Framework::deepspeed);
  CHECK(deepspeed.gradient_reduction_bytes() == 2);
  CHECK(deepspeed.gradient_bucket_bytes() == 1e9); // 5e8 elements
  CHECK_FALSE(deepspeed.framework.reduce_during_backward);
  CHECK_FALSE(deepspeed.framework.scatter_gather_sends);
  CHECK(plan_to_json(deepspeed)["framework"] == "deepspeed");
  CHECK(inputs.read(plan_to_json(deepspeed)) == deepspeed);

  const Plan fsdp = inputs.read(with(base(), "framework", "fsdp"));
  CHECK(fsdp.gradient_bucket_bytes() == 25 * units::kMiB);

  const json overridden = {{"name", "deepspeed"}, {"fp32_gradient_reduction", true}, {"reduce_during_backward", true},
                           {"cuda_context_gib", 1.0}, {"allocator_fragmentation", 0.2}};
  const Plan tuned = inputs.read(with(base(), "framework", overridden));
  CHECK(tuned.gradient_reduction_bytes() == 4);
  CHECK(tuned.gradient_bucket_bytes() == 2e9);
  CHECK(tuned.framework.reduce_during_backward);
  CHECK(tuned.framework.cuda_context_bytes == units::kGiB);
  CHECK(tuned.framework.allocator_fragmentation == 0.2);
  CHECK(plan_to_json(tuned)["framework"]["fp32_gradient_reduction"] == true);
  CHECK(inputs.read(plan_to_json(tuned)) == tuned);

  // The model's modules: Hugging Face's, eager, for DeepSpeed and FSDP (under autocast when the plan says so: a
  // plain PyTorch loop); Megatron-LM's fused ones, never under autocast.
  CHECK(deepspeed.framework.eager_modules);
  CHECK_FALSE(deepspeed.framework.autocast);
  CHECK(fsdp.framework.eager_modules);
  CHECK_FALSE(fsdp.framework.autocast);
  CHECK_FALSE(megatron_bf16.framework.eager_modules);
  const Plan plain_pytorch = inputs.read(with(base(), "framework", json{{"name", "fsdp"}, {"autocast", true}}));
  CHECK(plain_pytorch.framework.autocast);
  CHECK(inputs.read(plan_to_json(plain_pytorch)) == plain_pytorch);
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"eager_modules", false}, {"autocast", true}}),
                 "framework.autocast", "false with \"eager_modules\": false");
  // Megatron-DeepSpeed: Megatron-LM's fused modules in DeepSpeed's engine, whose BF16_Optimizer field it takes.
  const Plan megatron_deepspeed = inputs.read(with(base(), "framework", "megatron-deepspeed"));
  CHECK(megatron_deepspeed.framework.name == Framework::megatron_deepspeed);
  CHECK_FALSE(megatron_deepspeed.framework.eager_modules);
  CHECK(megatron_deepspeed.gradient_bucket_bytes() == deepspeed.gradient_bucket_bytes());
  CHECK(plan_to_json(megatron_deepspeed)["framework"] == "megatron-deepspeed");
  const Plan accumulating = inputs.read(
      with(base(), "framework", json{{"name", "megatron-deepspeed"}, {"fp32_gradient_accumulation", false}}));
  CHECK(accumulating.framework.fp32_gradient_accumulation == false);
  check_rejected(with(base(), "framework", json{{"name", "megatron"}, {"fp32_gradient_accumulation", true}}),
                 "framework.fp32_gradient_accumulation", "no field outside \"deepspeed\" and \"megatron-deepspeed\"");
  check_rejected(with(base(), "framework", json{{"name", "megatron"}, {"autocast", true}}), "framework.autocast",
                 "expected false with \"eager_modules\": false");
  // The PyTorch release, as torch.__version__ prints it, round-trips as MAJOR.MINOR.
  const Plan old_stack = inputs.read(with(base(), "framework", json{{"name", "fsdp"}, {"pytorch", "2.1.0+cu121"}}));
  CHECK(old_stack.framework.pytorch == SoftwareRelease{2, 1});
  CHECK(plan_to_json(old_stack)["framework"]["pytorch"] == "2.1");
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"pytorch", 2.1}}), "framework.pytorch",
                 "expected a PyTorch release \"MAJOR.MINOR\" such as \"2.1\"");

  check_rejected(with(base(), "framework", "horovod"), "framework",
                 "expected \"megatron\", \"deepspeed\", \"fsdp\" or \"megatron-deepspeed\"");
  check_rejected(with(base(), "framework", json{{"name", "megatron"}, {"bucket_size", 1}}), "framework",
                 "unknown field 'bucket_size'");
  check_rejected(with(base(), "framework", json{{"bucket_params", 1}}), "framework",
                 "missing required field 'name'");
}

TEST_CASE("unknown fields and unknown names are rejected")
{
  check_rejected(with(base(), "tensor_parallel", 2), "(top level)", "unknown field 'tensor_parallel'");
  check_rejected(with(base(), "schedule", "pipedream"), "schedule", "expected \"gpipe\", \"1f1b\" or \"zero_bubble\"");
  check_rejected(with(base(), "dtype", "int8"), "dtype", "expected \"fp16\", \"bf16\", \"fp32\" or \"fp8\"");
  check_rejected(with(base(), "collective_algorithm", "star"), "collective_algorithm",
                 "expected \"ring\", \"tree\", \"hierarchical\" or \"nccl\"");
  check_rejected(with(base(), "zero_stage", 4), "zero_stage", "expected 0, 1, 2 or 3, got 4");
}

TEST_CASE("a plan that leaves collectives to NCCL carries NCCL's environment, checked as NCCL reads it")
{
  Inputs inputs;
  json plan                    = with(base(), "collective_algorithm", "nccl");
  plan["nccl"]                 = {{"NCCL_ALGO", "Ring,Tree;allgather:Ring"}, {"NCCL_PROTO", "^LL128"},
                                  {"NCCL_MAX_NCHANNELS", 8}, {"NCCL_BUFFSIZE", 8388608}};
  const Plan read              = inputs.read(plan);
  CHECK(read.collective_algorithm == CollectiveAlgorithm::nccl);
  CHECK(read.nccl.algorithms == "Ring,Tree;allgather:Ring");
  CHECK(read.nccl.protocols == "^LL128");
  CHECK(read.nccl.max_channels == 8);
  CHECK(read.nccl.min_channels == 0);
  CHECK(read.nccl.buffer_bytes == 8388608);
  CHECK(inputs.read(plan_to_json(read)) == read);

  json bad_algo                = plan;
  bad_algo["nccl"]["NCCL_ALGO"] = "Ringg";
  check_rejected(bad_algo, "nccl.NCCL_ALGO", "'Ringg' is not one of NCCL's algorithms");
  json bad_prefix              = plan;
  bad_prefix["nccl"]["NCCL_PROTO"] = "LL;Simple";
  check_rejected(bad_prefix, "nccl.NCCL_PROTO", "every entry but the first needs a function prefix");
  json too_many                = plan;
  too_many["nccl"]["NCCL_MAX_NCHANNELS"] = 65;
  check_rejected(too_many, "nccl.NCCL_MAX_NCHANNELS", "at most 64 channels");
  json unknown                 = plan;
  unknown["nccl"]["NCCL_LL_BUFFSIZE"] = 4194304;
  check_rejected(unknown, "nccl", "unknown field 'NCCL_LL_BUFFSIZE'");
  json no_buffer               = plan;
  no_buffer["nccl"]["NCCL_BUFFSIZE"] = 0;
  check_rejected(no_buffer, "nccl.NCCL_BUFFSIZE", "positive");
  json ring                    = with(base(), "collective_algorithm", "ring");
  ring["nccl"]                 = {{"NCCL_ALGO", "Tree"}};
  check_rejected(ring, "nccl", "nothing unless \"collective_algorithm\" is \"nccl\"");
}

TEST_CASE("degrees must multiply to the cluster's device count")
{
  check_rejected(with(base(), "dp", 1), "(top level)",
                 "expected tp * pp * dp to equal the 8 devices of cluster 'test', got 2 * 2 * 1 = 4");
  check_rejected(json{{"tp", 4}, {"pp", 2}, {"dp", 2}, {"micro_batch", 1}}, "(top level)", "2 * 2 = 16");
}

TEST_CASE("pp may not exceed the model's layers")
{
  check_rejected(json{{"pp", 8}, {"micro_batch", 1}}, "pp", "expected at most 6 pipeline stages");
}

TEST_CASE("stage boundaries must start at 0, increase and stay inside the model")
{
  check_rejected(with(base(), "stage_starts", {1, 3}), "stage_starts[0]", "expected 0");
  check_rejected(with(json{{"pp", 4}, {"dp", 2}, {"micro_batch", 1}}, "stage_starts", {0, 3, 3, 5}),
                 "stage_starts[2]", "greater than stage_starts[1] = 3");
  check_rejected(with(json{{"pp", 4}, {"dp", 2}, {"micro_batch", 1}}, "stage_starts", {0, 4, 2, 5}),
                 "stage_starts[2]", "greater than stage_starts[1] = 4");
  check_rejected(with(base(), "stage_starts", {0, 6}), "stage_starts[1]", "below 6 (the model's layer count)");
  check_rejected(with(base(), "stage_starts", {0, -2}), "stage_starts[1]", "greater than stage_starts[0]");
}

TEST_CASE("placement must use each device of the cluster once")
{
  check_rejected(with(base(), "placement", {0, 1, 2, 1, 4, 5, 6, 7}), "placement[3]",
                 "expected each device once, got device 1 again (also at placement[1])");
  check_rejected(with(base(), "placement", {0, 1, 2, 3, 4, 5, 6, 8}), "placement[7]",
                 "expected a device id of cluster 'test' (0 to 7), got 8");
  check_rejected(with(base(), "placement", {0, -1, 2, 3, 4, 5, 6, 7}), "placement[1]", "got -1");
}

TEST_CASE("arrays must have one entry per rank, stage or replica")
{
  check_rejected(with(base(), "placement", {0, 1, 2, 3}), "placement", "expected 8 device ids (one per virtual rank), got 4");
  check_rejected(with(base(), "stage_starts", {0, 2, 4}), "stage_starts", "expected 2 layer indices (one per pipeline stage), got 3");
  check_rejected(with(base(), "micro_batch", {1, 2, 3}), "micro_batch", "an array of 2 (one per replica)");
  check_rejected(with(base(), "grad_accum", {1}), "grad_accum", "an array of 2 (one per replica)");
}

TEST_CASE("ZeRO-2 and ZeRO-3 need the same grad_accum on every replica")
{
  const json plan = with(with(base(), "grad_accum", {4, 2}), "zero_stage", 2);
  check_rejected(plan, "grad_accum", "expected the same value for every replica with zero_stage 2");
  Inputs inputs;
  CHECK(inputs.read(with(plan, "zero_stage", 1)).grad_accum == std::vector<int>{4, 2});
}

TEST_CASE("validate_plan checks plans built in code with the same messages")
{
  Inputs inputs;
  Plan plan = make_plan(inputs.cluster, inputs.workload, 2, 2, 2);
  CHECK_NOTHROW(validate_plan(plan, inputs.cluster, inputs.workload, "planner amp"));
  plan.micro_batch = {1, 2, 3};
  CHECK_THROWS_WITH_AS(validate_plan(plan, inputs.cluster, inputs.workload, "planner amp"),
                       "planner amp: micro_batch: expected 2 values (one per data-parallel rank), got 3", InputError);
  plan             = make_plan(inputs.cluster, inputs.workload, 2, 2, 2);
  plan.grad_accum  = {1, 0};
  CHECK_THROWS_WITH_AS(validate_plan(plan, inputs.cluster, inputs.workload, "planner amp"),
                       "planner amp: grad_accum[1]: expected a positive integer, got 0", InputError);
}

TEST_CASE("uniform stage starts give the first stages the extra layers")
{
  CHECK(uniform_stage_starts(10, 4) == std::vector<int>{0, 3, 6, 8});
  CHECK(uniform_stage_starts(6, 6) == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(uniform_stage_starts(82, 12).back() == 76);
}

TEST_CASE("load_plan names the file in every message")
{
  Inputs inputs;
  const auto dir = std::filesystem::temp_directory_path() / "hetsim_plan_json_test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.json").string();
  const std::string bad  = (dir / "bad.json").string();
  std::ofstream(good) << base().dump();
  std::ofstream(bad) << R"({"tp": 2, "pp": 2, "dp": 2, "micro_batch": 4, "stage_starts": [0, 9]})";
  CHECK(load_plan(good, inputs.cluster, inputs.workload).tp == 2);
  CHECK_THROWS_WITH_AS(load_plan(bad, inputs.cluster, inputs.workload),
                       doctest::Contains((bad + ": stage_starts[1]: expected a layer index below 6").c_str()), InputError);
  std::ofstream(bad) << "{\"tp\": ";
  CHECK_THROWS_WITH_AS(load_plan(bad, inputs.cluster, inputs.workload), doctest::Contains((bad + ": invalid JSON").c_str()),
                       InputError);
  CHECK_THROWS_WITH_AS(load_plan((dir / "missing.json").string(), inputs.cluster, inputs.workload),
                       doctest::Contains("missing.json: cannot open file"), InputError);
  CHECK_THROWS_WITH_AS(load_plan("preset:no_such_plan", inputs.cluster, inputs.workload),
                       doctest::Contains("preset:no_such_plan: unknown plan preset"), InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a global batch beyond int range is refused")
{
  const Cluster cluster           = make_cluster(1, 2);
  const models::Workload workload = make_workload(4);
  const json big = {{"dp", 2}, {"micro_batch", 2000000000}, {"grad_accum", 2}};
  CHECK_THROWS_WITH_AS(plan_from_json(big, "big.json", cluster, workload),
                       doctest::Contains("big.json: micro_batch: expected micro_batch x grad_accum summed"),
                       hetsim::InputError);
}

TEST_CASE("micro-batches and accumulation per device fold into per-replica values through the placement")
{
  const Cluster cluster           = make_cluster(1, 4);
  const models::Workload workload = make_workload(4);
  // pp 2 x dp 2; replica 0 runs on devices 3 and 1, replica 1 on devices 2 and 0.
  const json per_device = {{"pp", 2},
                           {"dp", 2},
                           {"placement", {3, 2, 1, 0}},
                           {"micro_batch_per_device", {5, 7, 5, 7}},
                           {"grad_accum_per_device", {2, 3, 2, 3}}};
  const Plan plan = plan_from_json(per_device, "pd.json", cluster, workload);
  CHECK(plan.micro_batch == std::vector<int>{7, 5});
  CHECK(plan.grad_accum == std::vector<int>{3, 2});
  CHECK(plan.global_batch() == 7 * 3 + 5 * 2);

  json split = per_device;
  split["micro_batch_per_device"] = {5, 6, 5, 7};
  CHECK_THROWS_WITH_AS(plan_from_json(split, "pd.json", cluster, workload),
                       "pd.json: micro_batch_per_device[1]: expected 7, the value of the other devices of replica 0, "
                       "got number 6",
                       InputError);
  json both = per_device;
  both["micro_batch"] = 4;
  CHECK_THROWS_WITH_AS(plan_from_json(both, "pd.json", cluster, workload),
                       "pd.json: (top level): give either micro_batch or micro_batch_per_device, not both", InputError);
  json short_list = per_device;
  short_list["grad_accum_per_device"] = {1, 2};
  CHECK_THROWS_WITH_AS(plan_from_json(short_list, "pd.json", cluster, workload),
                       doctest::Contains("pd.json: grad_accum_per_device: expected an array of 4 positive integers"),
                       InputError);
}

TEST_CASE("virtual_stages: chunks split evenly by default, round-trip, and what interleaved 1F1B needs")
{
  Inputs inputs;
  // 6 layers, pp 2 x 3 chunks: one layer per chunk, chunk k on stage k % 2.
  const json interleaved = with(with(base(), "virtual_stages", 3), "grad_accum", 4);
  const Plan plan        = inputs.read(interleaved);
  CHECK(plan.virtual_stages == 3);
  CHECK(plan.stage_starts == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(plan.stage_chunks(1) == std::vector<int>{1, 3, 5});
  CHECK(inputs.read(plan_to_json(plan)) == plan);
  CHECK(plan_to_json(inputs.read(base())).count("virtual_stages") == 0); // 1 is the default, left out

  check_rejected(with(interleaved, "virtual_stages", 0), "virtual_stages", "expected a positive integer");
  check_rejected(with(interleaved, "virtual_stages", 4), "virtual_stages", "at most 6 (model 'toy' has 6 layers");
  check_rejected(with(interleaved, "stage_starts", {0, 3}), "stage_starts", "expected pp x virtual_stages = 6");
  check_rejected(with(interleaved, "stage_starts", {0, 1, 2, 2, 4, 5}), "stage_starts[3]",
                 "every chunk needs at least one layer");
  // Megatron-LM's group of micro-batches per chunk ranges from pp to the micro-batches, and a last group shorter
  // than pp stalls its schedule: it raises on such plans.
  check_rejected(with(interleaved, "grad_accum", 1), "grad_accum[0]",
                 "expected at least 2 micro-batches with virtual_stages 3");
  check_rejected(with(interleaved, "grad_accum", 3), "grad_accum[0]", "or with a last group of at least pp (2)");
  CHECK(inputs.read(with(with(interleaved, "grad_accum", 5), "microbatch_group", 3)).grad_accum[0] == 5); // 3 + 2
  const Plan grouped = inputs.read(with(interleaved, "microbatch_group", 4));
  CHECK(grouped.interleave_group() == 4);
  CHECK(inputs.read(plan_to_json(grouped)) == grouped);
  check_rejected(with(interleaved, "microbatch_group", 1), "microbatch_group", "expected at least pp (2)");
  check_rejected(with(interleaved, "microbatch_group", 5), "grad_accum[0]",
                 "expected at least 5 micro-batches with virtual_stages 3 (interleaved 1F1B), in whole groups of "
                 "microbatch_group (5)");
  check_rejected(with(base(), "microbatch_group", 2), "microbatch_group", "expected none without virtual_stages");
  check_rejected(with(interleaved, "schedule", "gpipe"), "schedule", "expected \"1f1b\" with virtual_stages 3");
  check_rejected(with(interleaved, "zero_stage", 2), "zero_stage", "expected 0 or 1 with virtual_stages 3");
  check_rejected(with(with(with(interleaved, "pp", 1), "dp", 4), "virtual_stages", 2), "virtual_stages",
                 "expected 1 without pipeline parallelism");
}

TEST_CASE("a dtype a GPU lacks is refused naming the device; a plan without dtype takes the model's")
{
  // bf16 on the fixture's V100s, named by the plan.
  check_rejected(with(base(), "dtype", "bf16"), "dtype",
                 "bf16 needs bf16 tensor cores, which device 0's V100-SXM2-16GB lacks: use fp16 or fp32");

  // A mixed cluster: four A100s, then four V100s; the first V100 is named.
  Cluster mixed("mixed");
  const int a100_gpu = mixed.add_gpu(a100());
  const int v100_gpu = mixed.add_gpu(v100());
  const int region   = mixed.add_region("dc", 5e-6);
  for (int n = 0; n < 2; ++n) {
    const int node = mixed.add_node(region, "node" + std::to_string(n), Link{300e9, 2e-6}, Link{12.5e9, 5e-6});
    for (int d = 0; d < 4; ++d)
      mixed.add_device(node, n == 0 ? a100_gpu : v100_gpu, n == 0 ? "" : "cluster.json: regions[0].nodes[1].gpu");
  }
  const Inputs mixed_inputs{mixed};
  CHECK_THROWS_WITH_AS(mixed_inputs.read(with(base(), "dtype", "bf16")),
                       "plan.json: dtype: bf16 needs bf16 tensor cores, which device 4's V100-SXM2-16GB "
                       "(cluster.json: regions[0].nodes[1].gpu) lacks: use fp16 or fp32",
                       InputError);
  CHECK(mixed_inputs.read(with(base(), "dtype", "fp16")).dtype == Dtype::fp16);

  // A model saved in bf16: plans that say nothing train in bf16 where every GPU can, and say whose dtype it was
  // where one cannot.
  models::Workload bf16_model = make_workload(6);
  bf16_model.dtype            = Dtype::bf16;
  bf16_model.dtype_origin     = "model.json: torch_dtype";
  const Inputs on_a100{make_cluster(2, 4, a100()), bf16_model};
  CHECK(on_a100.read(base()).dtype == Dtype::bf16);
  CHECK(on_a100.read(with(base(), "dtype", "fp32")).dtype == Dtype::fp32);
  const Inputs on_v100{make_cluster(2, 4), bf16_model};
  CHECK_THROWS_WITH_AS(on_v100.read(base()),
                       "model.json: torch_dtype: bf16 needs bf16 tensor cores, which device 0's V100-SXM2-16GB "
                       "lacks: use fp16 or fp32 (plan.json: dtype overrides the model's dtype)",
                       InputError);
  CHECK(on_v100.read(with(base(), "dtype", "fp16")).dtype == Dtype::fp16);

  // Plans built in code are checked the same way.
  Plan plan  = make_plan(on_v100.cluster, on_v100.workload, 2, 2, 2, 4);
  plan.dtype = Dtype::bf16;
  CHECK_THROWS_WITH_AS(validate_plan(plan, on_v100.cluster, on_v100.workload, "planner amp"),
                       "planner amp: dtype: bf16 needs bf16 tensor cores, which device 0's V100-SXM2-16GB lacks: "
                       "use fp16 or fp32",
                       InputError);
}

TEST_CASE("recompute is true, false, \"none\", \"selective\" or \"full\"; sequence_parallel and ep round-trip")
{
  Inputs inputs;
  CHECK(inputs.read(with(base(), "recompute", "selective")).selective_recompute);
  CHECK_FALSE(inputs.read(with(base(), "recompute", "selective")).recompute);
  CHECK(inputs.read(with(base(), "recompute", "full")).recompute);
  CHECK_FALSE(inputs.read(with(base(), "recompute", "none")).recompute);
  check_rejected(with(base(), "recompute", "some"), "recompute",
                 "expected true, false, \"none\", \"selective\" or \"full\"");
  Plan plan = inputs.read(with(with(base(), "recompute", "selective"), "sequence_parallel", false));
  CHECK(plan.sequence_parallel == std::optional<bool>(false));
  CHECK_FALSE(plan.splits_sequence());
  CHECK(inputs.read(plan_to_json(plan)) == plan);
  CHECK(inputs.read(base()).splits_sequence()); // Megatron-LM's default with tp 2
  check_rejected(with(base(), "ep", 2), "ep", "expected 1: model 'toy' has no routed experts to divide, got 2");
}

TEST_CASE("tp must give each rank whole heads and key-value groups, an equal MLP slice and, split, the sequence")
{
  const Cluster cluster = make_cluster(1, 8);
  auto read = [&](const models::Workload& workload, json plan) {
    return plan_from_json(plan, "plan.json", cluster, workload);
  };
  const json tp8 = {{"tp", 8}, {"pp", 1}, {"dp", 1}, {"micro_batch", 1}};
  // GPT-2 small's 12 heads: tp 4 splits them, tp 8 does not (Megatron-LM's divide() asserts).
  const models::Workload gpt2 = models::build_transformer(models::testing::gpt_shape(4, 768, 12));
  CHECK_THROWS_WITH_AS(read(gpt2, tp8),
                       "plan.json: tp: expected a divisor of 12 (each rank takes whole heads and key-value groups "
                       "and an equal share of the MLP columns; model 'gpt' has 12 attention heads, 12 key-value "
                       "groups), got 8",
                       InputError);
  CHECK(read(gpt2, {{"tp", 4}, {"pp", 1}, {"dp", 2}, {"micro_batch", 1}}).tp == 4);
  // Grouped-query attention: 32 heads in 2 key-value groups split 2 ways at most.
  models::TransformerShape grouped = models::testing::gpt_shape(4, 4096, 32);
  grouped.kv_heads                 = 2;
  CHECK_THROWS_WITH_AS(read(models::build_transformer(grouped), tp8),
                       doctest::Contains("expected a divisor of 2 (each rank takes whole heads and key-value "
                                         "groups and an equal share of the MLP columns; model 'gpt' has 2 "
                                         "key-value groups)"),
                       InputError);
  // Multi-query attention (Falcon-7B's single key-value group) splits over no tp.
  grouped.kv_heads = 1;
  CHECK_THROWS_WITH_AS(read(models::build_transformer(grouped), tp8),
                       doctest::Contains("expected a divisor of 1 (each rank takes whole heads and key-value groups "
                                         "and an equal share of the MLP columns; model 'gpt' has 1 key-value group)"),
                       InputError);
  // A sequence of 1,020 tokens splits 4 ways but not 8 under sequence parallelism, Megatron-LM's default.
  const models::Workload odd = models::build_transformer(models::testing::gpt_shape(4, 1024, 16, 50257, 1020));
  CHECK_THROWS_WITH_AS(read(odd, tp8), doctest::Contains("plan.json: tp: expected a divisor of the 1020-token "
                                                         "sequence under sequence parallelism"),
                       InputError);
  CHECK(read(odd, with(tp8, "sequence_parallel", false)).tp == 8);
  // A layer list has no heads to split.
  CHECK(read(make_workload(4), tp8).tp == 8);
}

TEST_CASE("a plan names the DeepSpeed release it trains with; a bad one is one clear line")
{
  Inputs inputs;
  const Plan old = inputs.read(with(base(), "framework", json{{"name", "deepspeed"}, {"deepspeed", "0.3.15"}}));
  CHECK(old.framework.deepspeed == SoftwareRelease{0, 3});
  CHECK(zero3_list_collectives(old.framework));
  CHECK(plan_to_json(old)["framework"]["deepspeed"] == "0.3");
  CHECK(inputs.read(plan_to_json(old)) == old);
  check_rejected(with(base(), "framework", json{{"name", "deepspeed"}, {"deepspeed", "v3"}}), "framework.deepspeed",
                 "expected a DeepSpeed release \"MAJOR.MINOR\"");
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"pytorch", "0.4"}}), "framework.pytorch",
                 "expected a PyTorch release");
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"deepspeed", "0.3"}}), "framework.deepspeed",
                 "no field outside \"deepspeed\" and \"megatron-deepspeed\"");
  const Plan whole = inputs.read(with(base(), "framework", json{{"name", "deepspeed"}, {"persistence_threshold", 0}}));
  CHECK(whole.framework.persistence_threshold == 0);
  // DeepSpeed's stage3_max_reuse_distance: 0 is DeepSpeed's "release after every use", not "unset".
  const Plan eager = inputs.read(with(base(), "framework", json{{"name", "deepspeed"}, {"max_reuse_distance", 0}}));
  REQUIRE(eager.framework.max_reuse_distance);
  CHECK(*eager.framework.max_reuse_distance == 0);
  CHECK(plan_to_json(eager)["framework"]["max_reuse_distance"] == 0);
  CHECK(inputs.read(plan_to_json(eager)) == eager);
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"max_reuse_distance", 1e9}}),
                 "framework.max_reuse_distance", "no field outside \"deepspeed\" and \"megatron-deepspeed\"");
  check_rejected(with(base(), "framework", json{{"name", "deepspeed"}, {"max_reuse_distance", 1e16}}),
                 "framework.max_reuse_distance", "at most 1e15 elements");
}

TEST_CASE("a plan's framework names its selective recompute policy")
{
  Inputs inputs;
  const Plan titan = inputs.read(with(base(), "framework", json{{"name", "megatron"}, {"selective", "op"}}));
  CHECK(titan.framework.selective == models::SelectivePolicy::every_other_product);
  CHECK(plan_to_json(titan)["framework"]["selective"] == "op");
  CHECK(inputs.read(plan_to_json(titan)) == titan);
  CHECK(inputs.read(with(base(), "framework", "fsdp")).framework.selective ==
        models::SelectivePolicy::every_other_product);
  check_rejected(with(base(), "framework", json{{"name", "fsdp"}, {"selective", "layer"}}), "framework.selective",
                 "expected one of core_attn, op");
}

TEST_CASE("dtype fp8: bf16 with the blocks' products in fp8 under a recipe, where the GPUs have fp8")
{
  const Cluster h100 = make_cluster(2, 4, *find_catalog_gpu("H100"));
  const models::Workload workload = make_workload(6);
  const Plan read = plan_from_json(with(base(), "dtype", "fp8"), "plan.json", h100, workload);
  CHECK(read.dtype == Dtype::bf16);
  CHECK(read.framework.fp8 == models::Fp8Recipe::delayed); // Megatron-LM's default --fp8-recipe
  const json written = plan_to_json(read);
  CHECK(written.at("dtype") == "fp8");
  CHECK(written.at("fp8_recipe") == "delayed");
  CHECK(plan_from_json(written, "plan.json", h100, workload) == read);
  json blockwise = with(base(), "dtype", "fp8");
  blockwise["fp8_recipe"] = "blockwise";
  CHECK(plan_from_json(blockwise, "plan.json", h100, workload).framework.fp8 == models::Fp8Recipe::blockwise);

  auto refusal = [&](const Cluster& cluster, const json& plan) {
    try {
      plan_from_json(plan, "plan.json", cluster, workload);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  json mxfp8 = with(base(), "dtype", "fp8");
  mxfp8["fp8_recipe"] = "mxfp8";
  CHECK(refusal(h100, mxfp8) == "plan.json: fp8_recipe: mxfp8 needs Blackwell's block-scaled tensor cores (sm100 "
                                "or later), which device 0's H100-SXM5-80GB lacks: use delayed, tensorwise or blockwise");
  const Cluster b200 = make_cluster(2, 4, *find_catalog_gpu("B200"));
  CHECK(plan_from_json(mxfp8, "plan.json", b200, workload).framework.fp8 == models::Fp8Recipe::mxfp8);
  CHECK(refusal(make_cluster(2, 4, a100()), with(base(), "dtype", "fp8")) ==
        "plan.json: dtype: fp8 needs fp8 tensor cores (Ada, Hopper, Blackwell, CDNA3 and later), which device 0's "
        "A100-SXM4-80GB lacks: use bf16");
  CHECK(refusal(h100, with(base(), "fp8_recipe", "delayed")) ==
        "plan.json: fp8_recipe: expected nothing unless \"dtype\" is \"fp8\", got string \"delayed\"");
  json unknown = with(base(), "dtype", "fp8");
  unknown["fp8_recipe"] = "e4m3";
  CHECK(refusal(h100, unknown).find("plan.json: fp8_recipe: expected \"delayed\", \"tensorwise\", \"mxfp8\" or "
                                    "\"blockwise\"") == 0);

  // Weights kept in fp8: with the distributed optimizer only, as Megatron-LM asserts.
  json gathered = with(with(base(), "dtype", "fp8"), "fp8_param_gather", true);
  gathered["zero_stage"] = 1;
  const Plan kept = plan_from_json(gathered, "plan.json", h100, workload);
  CHECK(kept.framework.fp8_param_gather);
  CHECK(plan_to_json(kept).at("fp8_param_gather") == true);
  CHECK(plan_from_json(plan_to_json(kept), "plan.json", h100, workload) == kept);
  gathered["zero_stage"] = 0;
  CHECK(refusal(h100, gathered).find("plan.json: fp8_param_gather: expected zero_stage 1 (Megatron-LM's distributed "
                                     "optimizer") == 0);
  CHECK(refusal(h100, with(base(), "fp8_param_gather", true)) ==
        "plan.json: fp8_param_gather: expected nothing unless \"dtype\" is \"fp8\", got boolean");
  gathered["zero_stage"] = 1;
  gathered["framework"]  = "deepspeed";
  CHECK(refusal(h100, gathered) == "plan.json: fp8_param_gather: an fp8 plan under Megatron-LM (its "
                                   "--fp8-param-gather)");
}
