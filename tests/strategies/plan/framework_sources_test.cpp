#include "strategies/plan/framework_sources.hpp"

#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

using namespace hetsim;
using namespace hetsim::strategies;

namespace {

/// "path:line" -> the line's text, from the copies of the frameworks' trees in tests/data/frameworks.
const std::map<std::string, std::string>& release_lines()
{
  static const std::map<std::string, std::string> lines = [] {
    std::map<std::string, std::string> out;
    for (const char* name : {"deepspeed_v0.17.4.lines", "deepspeed_v0.16.5.lines", "megatron_core_v0.13.0.lines",
                             "megatron_deepspeed_4efb479d.lines", "pytorch.lines", "torchtitan_9dec370.lines"}) {
      std::ifstream in(std::string(HETSIM_SOURCE_DIR) + "/tests/data/frameworks/" + name);
      REQUIRE(in.good());
      for (std::string line; std::getline(in, line);) {
        const auto path_end = line.find(':');
        const auto line_end = line.find(':', path_end + 1);
        if (path_end != std::string::npos && line_end != std::string::npos)
          out[line.substr(0, line_end)] = line.substr(line_end + 1);
      }
    }
    return out;
  }();
  return lines;
}

/// A line of a file of this repository.
std::string repository_line(std::string_view file, int number)
{
  std::ifstream in(std::string(HETSIM_SOURCE_DIR) + "/" + std::string(file));
  std::string line;
  for (int n = 0; n < number && std::getline(in, line); ++n) {
  }
  return line;
}

const SettingSource& source(std::string_view setting, Framework framework)
{
  for (const SettingSource& s : framework_sources())
    if (s.setting == setting && s.framework == framework)
      return s;
  FAIL("no source for " << setting << " under " << framework_name(framework));
  throw;
}

bool says(std::string_view setting, Framework framework, std::string_view words)
{
  const SettingSource& s = source(setting, framework);
  return s.excerpt.find(words) != std::string_view::npos;
}

/// The framework fields a plan file can override (all of them written where none is at its default).
std::set<std::string> plan_fields()
{
  FrameworkSettings all              = framework_defaults(Framework::deepspeed);
  all.fp32_gradient_reduction        = true;
  all.fp32_gradient_accumulation     = true;
  all.communicator_buffer_bytes      = 128.0 * (1 << 20);
  Plan plan;
  plan.framework = all;
  std::set<std::string> fields;
  const nlohmann::json json = plan_to_json(plan);
  for (const auto& [key, value] : json.at("framework").items())
    if (key != "name")
      fields.insert(key);
  return fields;
}

const FrameworkSettings megatron  = framework_defaults(Framework::megatron);
const FrameworkSettings deepspeed = framework_defaults(Framework::deepspeed);
const FrameworkSettings fsdp      = framework_defaults(Framework::fsdp);
const FrameworkSettings mds       = framework_defaults(Framework::megatron_deepspeed);

} // namespace

TEST_CASE("every framework field has one source per framework, and every cited line says its excerpt")
{
  const std::set<std::string> fields = plan_fields();
  CHECK(fields.size() >= 16);
  std::map<std::pair<std::string, Framework>, int> seen;
  for (const SettingSource& s : framework_sources()) {
    CAPTURE(s.setting);
    CAPTURE(framework_name(s.framework));
    CHECK(fields.count(std::string(s.setting)) == 1);
    CHECK(++seen[{std::string(s.setting), s.framework}] == 1);
    CHECK(s.reading.size() > 10);
    CHECK(s.reading.find("PLACEHOLDER") == std::string_view::npos);
    if (s.line == 0)
      continue;
    const std::string at = std::string(s.file) + ":" + std::to_string(s.line);
    CAPTURE(at);
    const std::string text = s.release == kMeasured ? repository_line(s.file, s.line) : release_lines().count(at)
                                                                                            ? release_lines().at(at)
                                                                                            : std::string();
    CHECK(!s.excerpt.empty());
    CHECK(text.find(s.excerpt) != std::string::npos);
  }
  for (const std::string& field : fields)
    for (Framework f : {Framework::megatron, Framework::deepspeed, Framework::fsdp, Framework::megatron_deepspeed}) {
      CAPTURE(field);
      CHECK(seen.count({field, f}) == 1);
    }
}

// One case per row: the default each framework runs with is what its source line says.

TEST_CASE("row fp32_gradient_reduction: Megatron-LM with bf16 only; DeepSpeed in the model's dtype")
{
  CHECK(says("fp32_gradient_reduction", Framework::megatron, "accumulate_allreduce_grads_in_fp32 = True"));
  CHECK(reduces_in_fp32(megatron, Dtype::bf16));
  CHECK_FALSE(reduces_in_fp32(megatron, Dtype::fp16));
  CHECK(says("fp32_gradient_reduction", Framework::deepspeed, "COMMUNICATION_DATA_TYPE_DEFAULT = None"));
  CHECK_FALSE(reduces_in_fp32(deepspeed, Dtype::bf16));
  CHECK_FALSE(reduces_in_fp32(deepspeed, Dtype::fp16));
  CHECK_FALSE(reduces_in_fp32(fsdp, Dtype::bf16));
  // Megatron-DeepSpeed's bf16 fp32 main gradients are Megatron's DDP, which DeepSpeed's engine replaces.
  CHECK(says("fp32_gradient_reduction", Framework::megatron_deepspeed, "COMMUNICATION_DATA_TYPE_DEFAULT = None"));
  CHECK_FALSE(reduces_in_fp32(mds, Dtype::bf16));
}

TEST_CASE("row bucket_params: 40 M parameters, 5e8 elements, 25 MiB")
{
  CHECK(says("bucket_params", Framework::megatron, "40000000"));
  CHECK(megatron.bucket_params == 40e6);
  CHECK(says("bucket_params", Framework::deepspeed, "pp_int(5e8)"));
  CHECK(deepspeed.bucket_params == 5e8);
  CHECK(says("bucket_params", Framework::fsdp, "25"));
  CHECK(fsdp.bucket_params == 0); // 0: a size in bytes, DDP's 25 MiB (Plan::gradient_bucket_bytes)
  CHECK(says("bucket_params", Framework::megatron_deepspeed, "pp_int(5e8)"));
  CHECK(mds.bucket_params == 5e8);
}

TEST_CASE("row reduce_during_backward: overlapped under Megatron-LM and FSDP, after the backward under DeepSpeed")
{
  CHECK(says("reduce_during_backward", Framework::megatron, "--overlap-grad-reduce"));
  CHECK(megatron.reduce_during_backward);
  CHECK(says("reduce_during_backward", Framework::deepspeed, "self.stage == ZeroStageEnum.weights"));
  CHECK_FALSE(deepspeed.reduce_during_backward);
  CHECK(fsdp.reduce_during_backward);
  CHECK(says("reduce_during_backward", Framework::megatron_deepspeed, "self.stage == ZeroStageEnum.weights"));
  CHECK_FALSE(mds.reduce_during_backward);
}

TEST_CASE("row buckets_first_chunk_only: Megatron-LM buckets pipeline rank 0's first chunk only")
{
  CHECK(says("buckets_first_chunk_only", Framework::megatron, "if pp_rank > 0:"));
  CHECK(megatron.buckets_first_chunk_only);
  CHECK(says("buckets_first_chunk_only", Framework::deepspeed, "bucket_size=MEMORY_OPT_ALLREDUCE_SIZE"));
  CHECK_FALSE(deepspeed.buckets_first_chunk_only);
  CHECK_FALSE(fsdp.buckets_first_chunk_only);
  CHECK_FALSE(mds.buckets_first_chunk_only);
  Plan plan;
  plan.pp             = 4;
  plan.virtual_stages = 2;
  plan.framework      = megatron;
  CHECK(plan.buckets_chunk(0));
  for (int chunk = 1; chunk < plan.chunk_count(); ++chunk)
    CHECK_FALSE(plan.buckets_chunk(chunk));
  plan.framework.reduce_during_backward = false; // training.py l.1129: bucket_size None without overlap
  CHECK_FALSE(plan.buckets_chunk(0));
  plan.framework = deepspeed;
  for (int chunk = 0; chunk < plan.chunk_count(); ++chunk)
    CHECK(plan.buckets_chunk(chunk));
}

TEST_CASE("row tied_embedding_all_reduce: Megatron-LM and DeepSpeed keep the two copies equal; FSDP has one")
{
  CHECK(says("tied_embedding_all_reduce", Framework::megatron, "_allreduce_word_embedding_grads"));
  CHECK(megatron.tied_embedding_all_reduce);
  CHECK(says("tied_embedding_all_reduce", Framework::deepspeed, "ReduceTiedGrads"));
  CHECK(deepspeed.tied_embedding_all_reduce);
  CHECK_FALSE(fsdp.tied_embedding_all_reduce);
  CHECK(says("tied_embedding_all_reduce", Framework::megatron_deepspeed, "TiedLayerSpec('embed'"));
  CHECK(mds.tied_embedding_all_reduce);
}

TEST_CASE("row scatter_gather_sends and partitioned_sends: 1/tp under sequence parallelism or DeepSpeed's "
          "partitions")
{
  CHECK(says("scatter_gather_sends", Framework::megatron, "seq_length // parallel_state.get_tensor_model"));
  CHECK(megatron.scatter_gather_sends);
  CHECK(says("scatter_gather_sends", Framework::deepspeed, ".half()"));
  CHECK_FALSE(deepspeed.scatter_gather_sends);
  CHECK_FALSE(fsdp.scatter_gather_sends);
  CHECK(says("partitioned_sends", Framework::deepspeed, "['pipe_partitioned']"));
  CHECK(deepspeed.partitioned_sends);
  CHECK(says("partitioned_sends", Framework::megatron, "(seq_length, micro_batch_size, config.hidden_size)"));
  CHECK_FALSE(megatron.partitioned_sends);
  CHECK_FALSE(fsdp.partitioned_sends);
  // Megatron-DeepSpeed: Megatron's sequence parallelism off by default, DeepSpeed's partitions over tp.
  CHECK(says("scatter_gather_sends", Framework::megatron_deepspeed, "'--sequence-parallel', action='store_true'"));
  CHECK_FALSE(mds.scatter_gather_sends);
  CHECK(says("partitioned_sends", Framework::megatron_deepspeed, "['pipe_partitioned']"));
  CHECK(mds.partitioned_sends);
}

TEST_CASE("row sends_attention_mask: DeepSpeed's GPT models pass their mask along; GPTModelPipe caches it")
{
  CHECK(says("sends_attention_mask", Framework::deepspeed, ".half()"));
  CHECK(deepspeed.sends_attention_mask);
  CHECK(says("sends_attention_mask", Framework::megatron, "(seq_length, micro_batch_size, config.hidden_size)"));
  CHECK_FALSE(megatron.sends_attention_mask);
  CHECK_FALSE(fsdp.sends_attention_mask);
  CHECK(says("sends_attention_mask", Framework::megatron_deepspeed, "args.attn_mask ="));
  CHECK_FALSE(mds.sends_attention_mask);
}

TEST_CASE("row blocking_sends: batched isend/irecv under Megatron-LM, blocking sends under DeepSpeed")
{
  CHECK(says("blocking_sends", Framework::megatron, "batch_isend_irecv"));
  CHECK_FALSE(megatron.blocking_sends);
  CHECK(says("blocking_sends", Framework::deepspeed, "assert async_op == False"));
  CHECK(deepspeed.blocking_sends);
  CHECK_FALSE(fsdp.blocking_sends);
  CHECK(says("blocking_sends", Framework::megatron_deepspeed, "assert async_op == False"));
  CHECK(mds.blocking_sends);
}

TEST_CASE("row persistence_threshold: DeepSpeed keeps tensors under 1e5 elements whole; FSDP shards them all")
{
  CHECK(says("persistence_threshold", Framework::deepspeed, "pp_int(1e5)"));
  CHECK(deepspeed.persistence_threshold == 1e5);
  CHECK(says("persistence_threshold", Framework::megatron_deepspeed, "pp_int(1e5)"));
  CHECK(mds.persistence_threshold == 1e5);
  CHECK(says("persistence_threshold", Framework::fsdp, "flattened"));
  CHECK(fsdp.persistence_threshold == 0);
  CHECK(megatron.persistence_threshold == 0);
}

TEST_CASE("row max_reuse_distance: DeepSpeed regathers a recomputed tensor 1e9 elements from its backward")
{
  CHECK(says("max_reuse_distance", Framework::deepspeed, "pp_int(1e9)"));
  CHECK(deepspeed.max_reuse_distance == 1e9);
  CHECK(says("max_reuse_distance", Framework::megatron_deepspeed, "pp_int(1e9)"));
  CHECK(mds.max_reuse_distance == 1e9);
  CHECK(says("max_reuse_distance", Framework::fsdp, "BACKWARD_PRE"));
  CHECK_FALSE(fsdp.max_reuse_distance);
  CHECK_FALSE(megatron.max_reuse_distance);
}

TEST_CASE("row selective: Megatron-LM reruns its core attention; torchtitan keeps every other product")
{
  CHECK(says("selective", Framework::megatron, "core_attn"));
  CHECK(megatron.selective == models::SelectivePolicy::core_attention);
  CHECK(mds.selective == models::SelectivePolicy::core_attention);
  CHECK(deepspeed.selective == models::SelectivePolicy::core_attention);
  CHECK(says("selective", Framework::fsdp, "% 2 == 0"));
  CHECK(fsdp.selective == models::SelectivePolicy::every_other_product);
}

TEST_CASE("row gather_per_tensor and prefetch_params: DeepSpeed fetches modules 5e7 ahead; FSDP one flat "
          "parameter a block ahead")
{
  CHECK(says("gather_per_tensor", Framework::deepspeed, "__all_gather_params(params_to_fetch"));
  CHECK(deepspeed.gather_per_tensor);
  CHECK_FALSE(megatron.gather_per_tensor);
  CHECK_FALSE(fsdp.gather_per_tensor);
  CHECK(says("prefetch_params", Framework::deepspeed, "pp_int(5e7)"));
  CHECK(deepspeed.prefetch_params == 5e7);
  CHECK(says("prefetch_params", Framework::fsdp, "BackwardPrefetch.BACKWARD_PRE"));
  CHECK(fsdp.prefetch_params == 0);
  CHECK(megatron.prefetch_params == 0);
  CHECK(says("gather_per_tensor", Framework::megatron_deepspeed, "__all_gather_params(params_to_fetch"));
  CHECK(mds.gather_per_tensor);
  CHECK(says("prefetch_params", Framework::megatron_deepspeed, "pp_int(5e7)"));
  CHECK(mds.prefetch_params == 5e7);
}

TEST_CASE("row eager_modules and autocast: Megatron-LM's fused modules; DeepSpeed's cast model; FSDP's autocast")
{
  CHECK(says("eager_modules", Framework::megatron, "def bias_gelu"));
  CHECK_FALSE(megatron.eager_modules);
  CHECK(says("autocast", Framework::megatron, "module.bfloat16()"));
  CHECK_FALSE(megatron.autocast);
  CHECK(says("eager_modules", Framework::deepspeed, "self.module.bfloat16()"));
  CHECK(deepspeed.eager_modules);
  CHECK_FALSE(deepspeed.autocast);
  CHECK(says("autocast", Framework::fsdp, "param_dtype (Optional[torch.dtype])"));
  CHECK(fsdp.eager_modules);
  CHECK_FALSE(fsdp.autocast); // FSDP's MixedPrecision: weights gathered in 16-bit, nothing to cast
  // Megatron-DeepSpeed: Megatron's fused model, its vocabulary padded, cast to 16-bit by DeepSpeed's engine.
  CHECK(says("eager_modules", Framework::megatron_deepspeed, "'--make-vocab-size-divisible-by', type=int, default=128"));
  CHECK_FALSE(mds.eager_modules);
  CHECK(says("autocast", Framework::megatron_deepspeed, "self.module.bfloat16()"));
  CHECK_FALSE(mds.autocast);
}

TEST_CASE("row fp32_gradient_accumulation: DeepSpeed's BF16_Optimizer with bf16 and ZeRO off")
{
  CHECK(says("fp32_gradient_accumulation", Framework::deepspeed, "grad_accum_dtype = torch.float32"));
  CHECK_FALSE(deepspeed.fp32_gradient_accumulation.has_value());
  CHECK(uses_bf16_optimizer(deepspeed, Dtype::bf16, 0));
  CHECK_FALSE(uses_bf16_optimizer(deepspeed, Dtype::bf16, 1));
  CHECK_FALSE(uses_bf16_optimizer(deepspeed, Dtype::fp16, 0));
  FrameworkSettings asked              = deepspeed;
  asked.fp32_gradient_accumulation     = true; // data_types.grad_accum_dtype "fp32"
  CHECK(uses_bf16_optimizer(asked, Dtype::bf16, 1));
  CHECK_FALSE(uses_bf16_optimizer(megatron, Dtype::bf16, 0));
  CHECK_FALSE(uses_bf16_optimizer(fsdp, Dtype::bf16, 0));
  // Megatron-DeepSpeed hands its model to DeepSpeed's engine, which picks the BF16_Optimizer as under DeepSpeed.
  CHECK(says("fp32_gradient_accumulation", Framework::megatron_deepspeed, "grad_accum_dtype = torch.float32"));
  CHECK(uses_bf16_optimizer(mds, Dtype::bf16, 0));
  CHECK_FALSE(uses_bf16_optimizer(mds, Dtype::bf16, 1));
  CHECK(runs_deepspeed_engine(Framework::megatron_deepspeed));
  CHECK(runs_deepspeed_engine(Framework::deepspeed));
  CHECK_FALSE(runs_deepspeed_engine(Framework::megatron));
  CHECK_FALSE(runs_deepspeed_engine(Framework::fsdp));
}

TEST_CASE("rows of memory every framework holds: the CUDA context measured on the H100")
{
  CHECK(says("cuda_context_gib", Framework::megatron, "0.5 GiB"));
  for (const FrameworkSettings* s : {&megatron, &deepspeed, &fsdp, &mds}) {
    CHECK(s->cuda_context_bytes == 0.5 * (1 << 30));
    CHECK_FALSE(s->communicator_buffer_bytes.has_value()); // NCCL's own, from the cluster
    CHECK(s->gemm_workspace_bytes == 32.0 * (1 << 20));
    CHECK(s->allocator_fragmentation == 0.1);
  }
}
