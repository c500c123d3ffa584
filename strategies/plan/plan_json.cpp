#include "strategies/plan/plan_json.hpp"

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/presets.hpp"
#include "core/units.hpp"
#include "strategies/plan/problem.hpp"

#include <climits>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>

namespace hetsim::strategies {
namespace {

/// Smaller gradient buckets would only multiply tasks.
constexpr double kMinBucketBytes = 64 * 1024;
/// The most elements a framework count of elements may name: DeepSpeed reads them as integers.
constexpr double kMostElements = 1e15;

std::string str(long long value)
{
  return std::to_string(value);
}

std::string number(double value)
{
  return nlohmann::json(value).dump();
}

/// An integer that fits an int (signs are checked by the validation, which knows the limits).
int read_int(const JsonInput& value)
{
  const long long v = value.integer();
  if (v < INT_MIN || v > INT_MAX)
    value.fail("an integer of reasonable size");
  return static_cast<int>(v);
}

std::vector<int> read_int_list(const JsonInput& value)
{
  if (!value.is_array())
    value.fail("an array of integers");
  std::vector<int> out;
  out.reserve(value.size());
  for (const auto& element : value.elements())
    out.push_back(read_int(element));
  return out;
}

/// A positive number used for every replica, or one positive number per replica; repeated for each
/// data-parallel rank of a replica's context-parallel group.
std::vector<int> read_per_replica(const JsonInput& value, const Plan& plan)
{
  const int replicas = plan.replicas();
  if (value.is_number())
    return std::vector<int>(plan.dp, value.positive_int());
  if (!value.is_array() || static_cast<int>(value.size()) != replicas)
    value.fail("a positive integer or an array of " + str(replicas) + " (one per replica)");
  std::vector<int> out;
  out.reserve(plan.dp);
  for (const auto& element : value.elements())
    out.insert(out.end(), plan.cp, element.positive_int());
  return out;
}

/// A per-device list (indexed by device id, `device_count` long) folded into one value per replica: every
/// device of a replica (all its stages and tensor-parallel ranks) must carry the same value. Needs a placement
/// of the right size; otherwise it returns an empty vector and validate_plan reports the placement.
std::vector<int> read_per_device(const JsonInput& value, const Plan& plan, int device_count)
{
  if (!value.is_array() || static_cast<int>(value.size()) != device_count)
    value.fail("an array of " + str(device_count) + " positive integers (one per device, by device id)");
  std::vector<int> per_device;
  for (const auto& element : value.elements())
    per_device.push_back(element.positive_int());
  if (static_cast<long long>(plan.placement.size()) != static_cast<long long>(plan.world_size()))
    return {};
  std::vector<int> per_replica(plan.dp, 0);
  for (int r = 0; r < plan.dp; ++r)
    for (int s = 0; s < plan.pp; ++s)
      for (int t = 0; t < plan.tp; ++t) {
        const int device = plan.device(s, r, t);
        if (device < 0 || device >= device_count)
          return {};
        if (per_replica[r] == 0)
          per_replica[r] = per_device[device];
        else if (per_device[device] != per_replica[r])
          value.at(device).fail(str(per_replica[r]) + ", the value of the other devices of replica " +
                                str(r / plan.cp));
      }
  return per_replica;
}

/// `name` as one value per replica, or `name_per_device` as one per device; nullopt when neither is given.
std::optional<std::vector<int>> read_batch_field(const JsonInput& root, const std::string& name, const Plan& plan,
                                                 int device_count)
{
  auto per_replica = root.find(name);
  auto per_device  = root.find(name + "_per_device");
  if (per_replica && per_device)
    throw InputError(root.where() + ": give either " + name + " or " + name + "_per_device, not both");
  if (per_replica)
    return read_per_replica(*per_replica, plan);
  if (per_device)
    return read_per_device(*per_device, plan, device_count);
  return std::nullopt;
}

/// The per-replica vector (one entry per data-parallel rank, `cp` alike in a row) as one entry per replica, or
/// as a number when every replica has the same value.
nlohmann::json per_replica_json(const std::vector<int>& ranks, int cp)
{
  std::vector<int> values;
  for (std::size_t r = 0; r < ranks.size(); r += static_cast<std::size_t>(cp))
    values.push_back(ranks[r]);
  bool uniform = !values.empty();
  for (int v : values)
    uniform = uniform && v == values.front();
  if (uniform)
    return values.front();
  return values;
}

/// One entry per layer: 0 or 1 (the whole layer replicated or sharded), or {"sharded": j, "slices": k}.
std::vector<LayerSharding> read_layer_sharding(const JsonInput& value)
{
  if (!value.is_array())
    value.fail("an array with one entry per layer (0, 1 or {\"sharded\": j, \"slices\": k})");
  std::vector<LayerSharding> out;
  out.reserve(value.size());
  for (const auto& element : value.elements()) {
    LayerSharding s;
    if (element.is_number()) {
      s.sharded = element.non_negative_int();
      if (s.sharded > 1)
        element.fail("0 (replicated) or 1 (sharded)");
    } else if (element.is_object()) {
      element.allow_only({"sharded", "slices"});
      s.slices  = element.positive_int_or("slices", 1);
      auto sharded = element.find("sharded");
      if (!sharded)
        throw InputError(element.where() + ": missing required field 'sharded'");
      s.sharded = sharded->non_negative_int();
    } else {
      element.fail("0, 1 or {\"sharded\": j, \"slices\": k}");
    }
    out.push_back(s);
  }
  return out;
}

nlohmann::json layer_sharding_json(const std::vector<LayerSharding>& sharding)
{
  nlohmann::json out = nlohmann::json::array();
  for (const LayerSharding& s : sharding) {
    if (s.slices == 1)
      out.push_back(s.sharded);
    else
      out.push_back({{"sharded", s.sharded}, {"slices", s.slices}});
  }
  return out;
}

int layer_count(const models::Workload& workload)
{
  return static_cast<int>(workload.layers.size());
}

/// Calls `differs(field, r, expected, got)` where data-parallel rank r's micro_batch, grad_accum or
/// last_micro_batch differs from that of the first rank of its group (`group_first(r)`): the members of an
/// expert- or context-parallel group run the same micro-batches.
template <class GroupFirst, class Differs>
void check_groups_agree(const Plan& plan, GroupFirst group_first, Differs differs)
{
  const std::pair<const char*, const std::vector<int>*> fields[] = {
      {"micro_batch", &plan.micro_batch}, {"grad_accum", &plan.grad_accum}, {"last_micro_batch", &plan.last_micro_batch}};
  for (int r = 0; r < plan.dp; ++r)
    for (const auto& [name, values] : fields) {
      const int first = group_first(r);
      if (r < static_cast<int>(values->size()) && (*values)[r] != (*values)[first])
        differs(name, r, (*values)[first], (*values)[r]);
    }
}

/// Refuses a tp that does not divide tensor_parallel_limit, naming what it would split unevenly.
template <class Fail>
void validate_tensor_parallel(const Plan& plan, const models::Workload& workload, Fail fail)
{
  if (tensor_parallel_limit(workload, plan.splits_sequence()) % plan.tp == 0)
    return;
  const models::TransformerShape& shape = *workload.shape;
  const int limit                       = shape.tensor_parallel_limit();
  if (limit % plan.tp != 0) {
    std::string counts;
    for (const auto& split : shape.tensor_parallel_splits())
      if (split.count % plan.tp != 0) {
        const std::string_view what = split.what; // plural; singular for one
        counts += (counts.empty() ? "" : ", ") + str(split.count) + " " +
                  std::string(what.substr(0, what.size() - (split.count == 1 ? 1 : 0)));
      }
    fail("tp", "expected a divisor of " + str(limit) + " (each rank takes whole heads and key-value groups and an "
               "equal share of the MLP columns; model " + quote(workload.name) + " has " + counts + "), got " +
               str(plan.tp));
  }
  fail("tp", "expected a divisor of the " + str(workload.seq_len) +
                 "-token sequence under sequence parallelism (each rank keeps an equal slice; "
                 "\"sequence_parallel\": false lifts it), got " + str(plan.tp));
}

/// What context parallelism runs with: a transformer with flash attention (Transformer Engine's ring attention
/// is a fused-attention kernel), a sequence Megatron-LM can cut into 2 x cp chunks (x tp under sequence
/// parallelism), a framework that has it, no expert parallelism, and the same micro-batches on a group's ranks.
template <class Fail>
void validate_context_parallel(const Plan& plan, const models::Workload& workload, Fail fail)
{
  const std::string with_cp = "with cp " + str(plan.cp) + " (context parallelism)";
  if (!workload.shape)
    fail("cp", "expected 1: model " + quote(workload.name) +
                   " is a layer list, whose attention HetSim cannot cut over the sequence, got " + str(plan.cp));
  if (!workload.shape->flash_attention)
    fail("cp", "expected 1 without flash attention (ring attention runs in a fused-attention kernel; model " +
                   quote(workload.name) + " has \"flash_attention\": false), got " + str(plan.cp));
  const int chunks = 2 * plan.cp * (plan.splits_sequence() ? plan.tp : 1);
  if (workload.seq_len % chunks != 0)
    fail("cp", "expected the sequence of " + str(workload.seq_len) + " tokens to split into 2 x cp" +
                   (plan.splits_sequence() ? " x tp" : "") + " = " + str(chunks) +
                   " equal chunks (Megatron-LM's load-balanced causal split), got cp " + str(plan.cp));
  if (runs_deepspeed_engine(plan.framework.name))
    fail("cp", "expected 1 with framework \"" + std::string(framework_name(plan.framework.name)) +
                   "\" (it has no ring attention; its Ulysses sequence parallelism is not modelled), got " +
                   str(plan.cp));
  if (plan.ep > 1)
    fail("ep", "expected 1 " + with_cp + " (experts over context-parallel ranks are not modelled), got " +
                   str(plan.ep));
  // Per-replica lists repeat each value over a group; per-device lists may not.
  check_groups_agree(plan, [&](int r) { return plan.context_group_first(r); },
                     [&](const char* name, int r, int expected, int got) {
                       fail(std::string(name) + "_per_device",
                            "expected " + str(expected) + " on every device of replica " + str(r / plan.cp) + " " +
                                with_cp + ": its ranks hold parts of the same sequences, got " + str(got));
                     });
}

} // namespace

int tensor_parallel_limit(const models::Workload& workload, bool splits_sequence)
{
  if (!workload.shape)
    return 0;
  const int limit = workload.shape->tensor_parallel_limit();
  return splits_sequence ? std::gcd(limit, workload.seq_len) : limit;
}

std::vector<int> uniform_stage_starts(int layer_count, int pp)
{
  HETSIM_ASSERT(pp > 0 && pp <= layer_count);
  std::vector<int> starts(pp);
  const int base  = layer_count / pp;
  const int extra = layer_count % pp;
  int layer       = 0;
  for (int s = 0; s < pp; ++s) {
    starts[s] = layer;
    layer += base + (s < extra ? 1 : 0);
  }
  return starts;
}

void validate_plan(const Plan& plan, const Cluster& cluster, const models::Workload& workload,
                   const std::string& origin)
{
  auto fail = [&](const std::string& path, const std::string& message) {
    throw InputError(origin + ": " + path + ": " + message);
  };
  for (auto [name, degree] : {std::pair{"tp", plan.tp}, std::pair{"pp", plan.pp}, std::pair{"dp", plan.dp},
                              std::pair{"cp", plan.cp}})
    if (degree < 1)
      fail(name, "expected a positive integer, got " + str(degree));
  if (plan.dp % plan.cp != 0) // a plan built in code; files give the replicas
    fail("cp", "expected a divisor of the " + str(plan.dp) + " data-parallel ranks, got " + str(plan.cp));

  const long long world = static_cast<long long>(plan.tp) * plan.pp * plan.dp;
  if (world != cluster.device_count())
    fail("(top level)", "expected tp * " + std::string(plan.cp > 1 ? "cp * " : "") + "pp * dp to equal the " +
                            str(cluster.device_count()) + " devices of cluster '" + cluster.name() + "', got " +
                            str(plan.tp) + " * " + (plan.cp > 1 ? str(plan.cp) + " * " : "") + str(plan.pp) +
                            " * " + str(plan.replicas()) + " = " + str(world));

  if (plan.tp > 1)
    validate_tensor_parallel(plan, workload, fail);

  const int layers = layer_count(workload);
  if (plan.pp > layers)
    fail("pp", "expected at most " + str(layers) + " pipeline stages (model " + quote(workload.name) + " has " +
                   str(layers) + " layers), got " + str(plan.pp));

  if (static_cast<long long>(plan.placement.size()) != world)
    fail("placement", "expected " + str(world) + " device ids (one per virtual rank), got " +
                          str(plan.placement.size()));
  std::vector<int> rank_of_device(cluster.device_count(), -1);
  for (int rank = 0; rank < static_cast<int>(world); ++rank) {
    const int device      = plan.placement[rank];
    const std::string at  = "placement[" + str(rank) + "]";
    if (device < 0 || device >= cluster.device_count())
      fail(at, "expected a device id of cluster " + quote(cluster.name()) + " (0 to " + str(cluster.device_count() - 1) +
                   "), got " + str(device));
    if (rank_of_device[device] >= 0)
      fail(at, "expected each device once, got device " + str(device) + " again (also at placement[" +
                   str(rank_of_device[device]) + "])");
    rank_of_device[device] = rank;
  }

  if (plan.virtual_stages < 1)
    fail("virtual_stages", "expected a positive integer, got " + str(plan.virtual_stages));
  const long long chunks = static_cast<long long>(plan.pp) * plan.virtual_stages;
  if (plan.virtual_stages > 1 && chunks > layers)
    fail("virtual_stages", "expected pp x virtual_stages at most " + str(layers) + " (model " + quote(workload.name) +
                               " has " + str(layers) + " layers, one at least per chunk), got " + str(plan.pp) +
                               " x " + str(plan.virtual_stages));
  const std::string unit = plan.virtual_stages > 1 ? "chunk" : "stage";
  if (static_cast<long long>(plan.stage_starts.size()) != chunks)
    fail("stage_starts", plan.virtual_stages > 1
                             ? "expected pp x virtual_stages = " + str(chunks) +
                                   " layer indices (one per model chunk, chunk k on stage k % pp), got " +
                                   str(plan.stage_starts.size())
                             : "expected " + str(plan.pp) + " layer indices (one per pipeline stage), got " +
                                   str(plan.stage_starts.size()));
  for (int s = 0; s < static_cast<int>(chunks); ++s) {
    const int start      = plan.stage_starts[s];
    const std::string at = "stage_starts[" + str(s) + "]";
    if (s == 0 && start != 0)
      fail(at, "expected 0 (the first " + unit + " starts at the first layer), got " + str(start));
    if (s > 0 && start <= plan.stage_starts[s - 1])
      fail(at, "expected a layer index greater than stage_starts[" + str(s - 1) + "] = " +
                   str(plan.stage_starts[s - 1]) + " (every " + unit + " needs at least one layer), got " +
                   str(start));
    if (start >= layers)
      fail(at, "expected a layer index below " + str(layers) + " (the model's layer count), got " + str(start));
  }

  // A per-replica field's index in the file: data-parallel rank r belongs to replica r / cp.
  auto entry = [&](const std::string& name, int r) { return name + "[" + str(r / plan.cp) + "]"; };
  auto check_per_replica = [&](const char* name, const std::vector<int>& values) {
    if (static_cast<int>(values.size()) != plan.dp)
      fail(name, "expected " + str(plan.dp) + " values (one per data-parallel rank), got " + str(values.size()));
    for (int r = 0; r < plan.dp; ++r)
      if (values[r] < 1)
        fail(entry(name, r), "expected a positive integer, got " + str(values[r]));
  };
  check_per_replica("micro_batch", plan.micro_batch);
  check_per_replica("grad_accum", plan.grad_accum);
  // Sequence counts are ints downstream (Problem::global_batch); beyond that a plan is a typo anyway.
  if (plan.global_batch() > std::numeric_limits<int>::max())
    fail("micro_batch", "expected micro_batch x grad_accum summed over replicas (the global batch) to stay below " +
                            str(std::numeric_limits<int>::max()) + " sequences, got " + str(plan.global_batch()));

  if (int device = first_device_lacking(cluster, plan.dtype); device >= 0)
    fail("dtype", dtype_refusal(cluster, device, plan.dtype));
  if (plan.framework.fp8 != models::Fp8Recipe::none)
    for (int device : plan.placement) {
      const GpuSpec& gpu = cluster.gpu_of(device);
      if (gpu.peak_flops_fp8 <= 0)
        fail("dtype", "fp8 needs fp8 tensor cores (Ada, Hopper, Blackwell, CDNA3 and later), which device " +
                          str(device) + "'s " + cluster.describe_gpu(device) + " lacks: use bf16");
      if (plan.framework.fp8 == models::Fp8Recipe::mxfp8 && gpu.compute_capability < 100)
        fail("fp8_recipe", "mxfp8 needs Blackwell's block-scaled tensor cores (sm100 or later), which device " +
                               str(device) + "'s " + cluster.describe_gpu(device) +
                               " lacks: use delayed, tensorwise or blockwise");
    }

  if (plan.zero_stage < 0 || plan.zero_stage > 3)
    fail("zero_stage", "expected 0, 1, 2 or 3, got " + str(plan.zero_stage));
  if (plan.framework.fp8_param_gather &&
      (plan.framework.fp8 == models::Fp8Recipe::none || plan.framework.name != Framework::megatron))
    fail("fp8_param_gather", "an fp8 plan under Megatron-LM (its --fp8-param-gather)");
  if (plan.framework.fp8_param_gather && plan.zero_stage != 1)
    fail("fp8_param_gather", "expected zero_stage 1 (Megatron-LM's distributed optimizer gathers the fp8 weights; with "
                             "Megatron-FSDP or without sharding it is not modelled), got zero_stage " +
                                 str(plan.zero_stage));
  // DeepSpeed runs its BF16_Optimizer for bf16 at ZeRO 0-1 only; ZeRO-2/3 keep their own fp32 partitions.
  if (plan.framework.fp32_gradient_accumulation == false && plan.dtype == Dtype::bf16 && plan.zero_stage == 0)
    fail("framework.fp32_gradient_accumulation",
         "true or unset with dtype bf16 and zero_stage 0: DeepSpeed then runs its BF16_Optimizer whatever the "
         "accumulation dtype, and accumulating in bf16 (pipelines only) is not modelled");
  if (plan.framework.fp32_gradient_accumulation.value_or(false) && (plan.dtype != Dtype::bf16 || plan.zero_stage > 1))
    fail("framework.fp32_gradient_accumulation",
         "expected it only with dtype bf16 and zero_stage 0 or 1 (DeepSpeed's BF16_Optimizer), got dtype " +
             std::string(dtype_name(plan.dtype)) + " and zero_stage " + str(plan.zero_stage));
  if (plan.zero_stage >= 2 && plan.dp > 1)
    for (int r = 1; r < plan.dp; ++r)
      if (plan.grad_accum[r] != plan.grad_accum[0])
        fail("grad_accum", "expected the same value for every replica with zero_stage " + str(plan.zero_stage) +
                               " (it synchronises every micro-batch), got " + str(plan.grad_accum[0]) + " and " +
                               str(plan.grad_accum[r]));
  if (!plan.last_micro_batch.empty()) {
    check_per_replica("last_micro_batch", plan.last_micro_batch);
    if (plan.pp != 1)
      fail("last_micro_batch", "expected pp 1 (a smaller last micro-batch is only modelled without pipelining), got pp " +
                                   str(plan.pp));
    for (int r = 0; r < plan.dp; ++r)
      if (plan.last_micro_batch[r] > plan.micro_batch[r])
        fail(entry("last_micro_batch", r), "expected at most " + entry("micro_batch", r) + " = " +
                                               str(plan.micro_batch[r]) + ", got " + str(plan.last_micro_batch[r]));
  }
  if (!plan.layer_sharding.empty()) {
    if (static_cast<int>(plan.layer_sharding.size()) != layers)
      fail("layer_sharding", "expected " + str(layers) + " entries (one per layer of model '" + workload.name +
                                 "'), got " + str(plan.layer_sharding.size()));
    for (int l = 0; l < layers; ++l) {
      const LayerSharding& s = plan.layer_sharding[l];
      const std::string at   = "layer_sharding[" + str(l) + "]";
      if (s.slices != 1 && s.slices != 2 && s.slices != 4 && s.slices != 8)
        fail(at + ".slices", "expected 1, 2, 4 or 8, got " + str(s.slices));
      if (s.sharded < 0 || s.sharded > s.slices)
        fail(at + ".sharded", "expected 0 to " + str(s.slices) + " (the slices), got " + str(s.sharded));
    }
    if (plan.zero_stage != 0)
      fail("zero_stage", "expected 0 with layer_sharding (replicated slices are plain data parallel), got " +
                             str(plan.zero_stage));
    if (plan.shards_layers())
      for (int r = 1; r < plan.dp; ++r)
        if (plan.grad_accum[r] != plan.grad_accum[0])
          fail("grad_accum", "expected the same value for every replica with sharded layers (they synchronise "
                             "every micro-batch), got " + str(plan.grad_accum[0]) + " and " + str(plan.grad_accum[r]));
  }
  if (plan.virtual_stages > 1) {
    // What Megatron-LM's interleaved schedule runs with; HetSim models nothing else under it.
    const std::string interleaved = "with virtual_stages " + str(plan.virtual_stages) + " (interleaved 1F1B)";
    if (plan.pp == 1)
      fail("virtual_stages", "expected 1 without pipeline parallelism (pp 1), got " + str(plan.virtual_stages));
    if (plan.schedule != PipelineSchedule::one_f_one_b)
      fail("schedule", "expected \"1f1b\" " + interleaved + ", got \"" + std::string(schedule_name(plan.schedule)) +
                           "\"");
    if (plan.zero_stage > 1)
      fail("zero_stage", "expected 0 or 1 " + interleaved +
                             " (Megatron-LM's distributed optimizer; ZeRO-2/3 per-micro-batch reductions are not "
                             "modelled across chunks), got " + str(plan.zero_stage));
    if (plan.shards_layers())
      fail("layer_sharding", "expected no sharded layers " + interleaved);
    // Megatron-LM's range for its microbatch_group_size_per_vp_stage: [pp, micro-batches].
    if (plan.microbatch_group != 0 && plan.microbatch_group < plan.pp)
      fail("microbatch_group", "expected at least pp (" + str(plan.pp) + ") " + interleaved + ", got " +
                                   str(plan.microbatch_group));
    const std::string group = plan.microbatch_group > 0 ? "microbatch_group" : "pp";
    for (int r = 0; r < plan.dp; ++r)
      if (!plan.interleaves(plan.grad_accum[r]))
        fail(plan.replicas() > 1 ? entry("grad_accum", r) : std::string("grad_accum"),
             "expected at least " + str(plan.interleave_group()) + " micro-batches " + interleaved +
                 ", in whole groups of " + group + " (" + str(plan.interleave_group()) +
                 ") or with a last group of at least pp (" + str(plan.pp) +
                 "), as Megatron-LM's schedule requires; got " + str(plan.grad_accum[r]));
  } else if (plan.microbatch_group != 0) {
    fail("microbatch_group", "expected none without virtual_stages (it groups micro-batches of interleaved 1F1B), got " +
                                 str(plan.microbatch_group));
  }
  if (plan.schedule == PipelineSchedule::zero_bubble) {
    const std::string zero_bubble = "with schedule \"zero_bubble\" (ZB-H1)";
    if (plan.virtual_stages > 1)
      fail("virtual_stages", "expected 1 " + zero_bubble + ", got " + str(plan.virtual_stages));
    if (plan.recompute)
      fail("recompute", "expected none or \"selective\" " + zero_bubble +
                            " (a fully recomputed forward would have to run before each half), got full");
    if (plan.zero_stage > 1 || plan.shards_layers())
      fail(plan.zero_stage > 1 ? "zero_stage" : "layer_sharding",
           "expected ZeRO 0 or 1 " + zero_bubble +
               " (gradients are complete only after the weight-gradient steps; per-micro-batch reductions are not "
               "modelled), got " + (plan.zero_stage > 1 ? str(plan.zero_stage) : "sharded layers"));
  }
  if (plan.recompute && plan.selective_recompute)
    fail("recompute", "expected one of full or selective recompute, got both");
  if (plan.ep < 1)
    fail("ep", "expected a positive integer, got " + str(plan.ep));
  if (plan.ep > 1) {
    const std::string with_ep = "with ep " + str(plan.ep) + " (expert parallelism)";
    if (!workload.shape || !workload.shape->mixture_of_experts())
      fail("ep", "expected 1: model " + quote(workload.name) + " has no routed experts to divide, got " + str(plan.ep));
    if (workload.shape->experts % plan.ep != 0)
      fail("ep", "expected a divisor of the " + str(workload.shape->experts) + " experts of model " +
                     quote(workload.name) + ", got " + str(plan.ep));
    if (plan.dp % plan.ep != 0)
      fail("ep", "expected a divisor of dp (" + str(plan.dp) + "): expert-parallel groups are made of replicas, got " +
                     str(plan.ep));
    if (plan.zero_stage > 2)
      fail("zero_stage", "expected 0, 1 or 2 " + with_ep + " (ZeRO-3 sharding of experts is not modelled), got " +
                             str(plan.zero_stage));
    if (!plan.layer_sharding.empty())
      fail("layer_sharding", "expected none " + with_ep);
    // The members of a group exchange tokens every micro-batch: they run the same micro-batches.
    const auto group_first = [&](int r) { return r - plan.expert_rank(r); };
    check_groups_agree(plan, group_first, [&](const char* name, int r, int expected, int got) {
      fail(std::string(name) + "[" + str(r) + "]",
           "expected " + str(expected) + " like replica " + str(group_first(r)) + " of its expert-parallel group " +
               with_ep + ": the group's replicas exchange tokens every micro-batch, got " + str(got));
    });
  }
  if (plan.cp > 1)
    validate_context_parallel(plan, workload, fail);
  if (plan.bucket_bytes > 0 && plan.bucket_bytes < kMinBucketBytes)
    fail("bucket_mib", "expected at least 0.0625 (64 KiB), got " + number(plan.bucket_bytes / units::kMiB));
}

namespace {

/// The plan's "nccl": NCCL's environment variables by their names, each checked as NCCL reads it.
costmodel::NcclEnvironment read_nccl_environment(const JsonInput& input)
{
  input.allow_only({"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE"});
  costmodel::NcclEnvironment environment;
  costmodel::NcclEnabled ignored{};
  if (const auto algo = input.find("NCCL_ALGO")) {
    environment.algorithms = algo->string();
    costmodel::parse_nccl_list(environment.algorithms, algo->where(), false, ignored);
  }
  if (const auto proto = input.find("NCCL_PROTO")) {
    environment.protocols = proto->string();
    costmodel::parse_nccl_list(environment.protocols, proto->where(), true, ignored);
  }
  for (const auto& [key, channels] : {std::pair{"NCCL_MIN_NCHANNELS", &environment.min_channels},
                                      std::pair{"NCCL_MAX_NCHANNELS", &environment.max_channels}})
    if (const auto field = input.find(key)) {
      *channels = field->positive_int();
      if (*channels > costmodel::kNcclMaxChannels)
        field->fail("at most " + std::to_string(costmodel::kNcclMaxChannels) + " channels (NCCL's MAXCHANNELS)");
    }
  // Bytes, as NCCL stores it (an int per protocol, src/init.cc:827).
  if (const auto buffer = input.find("NCCL_BUFFSIZE"))
    environment.buffer_bytes = buffer->positive_int();
  return environment;
}

/// `key` of a framework object, refused unless the framework runs DeepSpeed's engine (`what`: what DeepSpeed
/// calls it).
std::optional<JsonInput> deepspeed_field(const JsonInput& input, Framework name, std::string_view key,
                                         const std::string& what)
{
  auto field = input.find(key);
  if (field && !runs_deepspeed_engine(name))
    field->fail("no field outside \"deepspeed\" and \"megatron-deepspeed\" (" + what + ")");
  return field;
}

/// "megatron" or {"name": "deepspeed", <overrides>}: the framework's defaults with any field replaced.
FrameworkSettings read_framework(const JsonInput& input)
{
  Framework name = Framework::megatron;
  const bool object = input.is_object();
  const JsonInput name_input = object ? input.at("name") : input;
  if (!name_input.is_string() || !parse_framework(name_input.string(), name))
    name_input.fail("\"megatron\", \"deepspeed\", \"fsdp\" or \"megatron-deepspeed\" (or an object with \"name\" and "
                    "overrides)");
  FrameworkSettings settings = framework_defaults(name);
  if (!object)
    return settings;
  input.allow_only({"name", "fp32_gradient_reduction", "bucket_params", "reduce_during_backward",
                    "buckets_first_chunk_only", "tied_embedding_all_reduce", "scatter_gather_sends",
                    "sends_attention_mask", "partitioned_sends", "blocking_sends",
                    "gather_per_tensor", "prefetch_params", "persistence_threshold", "max_reuse_distance", "deepspeed",
                    "cuda_context_gib", "communicator_buffer_mib", "gemm_workspace_mib", "allocator_fragmentation",
                    "eager_modules", "autocast", "fp32_gradient_accumulation", "attention", "pytorch",
                    "selective"});
  if (auto release = input.find("pytorch")) {
    const auto parsed = release->is_string() ? parse_pytorch_release(release->string()) : std::nullopt;
    if (!parsed)
      release->fail("a PyTorch release \"MAJOR.MINOR\" such as \"2.1\" (or torch.__version__, \"2.1.0+cu121\")");
    settings.pytorch = *parsed;
  }
  if (auto attention = input.find("attention")) {
    settings.attention = models::parse_attention_kernel(attention->string());
    if (!settings.attention)
      attention->fail("one of " + models::attention_kernel_names() + " (default: the framework's)");
  }
  if (auto selective = input.find("selective")) {
    const auto policy = selective->is_string() ? models::parse_selective_policy(selective->string()) : std::nullopt;
    if (!policy)
      selective->fail("one of " + models::selective_policy_names() + " (Megatron-LM's core attention, or "
                      "torchtitan's op-level policy)");
    settings.selective = *policy;
  }
  if (auto fp32 = input.find("fp32_gradient_reduction"))
    settings.fp32_gradient_reduction = fp32->boolean();
  if (auto fp32 = deepspeed_field(input, name, "fp32_gradient_accumulation",
                                  "DeepSpeed's data_types.grad_accum_dtype; Megatron-LM's fp32 main gradients are "
                                  "\"fp32_gradient_reduction\""))
    settings.fp32_gradient_accumulation = fp32->boolean();
  settings.bucket_params = input.non_negative_number_or("bucket_params", settings.bucket_params);
  settings.reduce_during_backward = input.boolean_or("reduce_during_backward", settings.reduce_during_backward);
  settings.buckets_first_chunk_only =
      input.boolean_or("buckets_first_chunk_only", settings.buckets_first_chunk_only);
  settings.tied_embedding_all_reduce =
      input.boolean_or("tied_embedding_all_reduce", settings.tied_embedding_all_reduce);
  settings.scatter_gather_sends = input.boolean_or("scatter_gather_sends", settings.scatter_gather_sends);
  settings.sends_attention_mask = input.boolean_or("sends_attention_mask", settings.sends_attention_mask);
  settings.partitioned_sends    = input.boolean_or("partitioned_sends", settings.partitioned_sends);
  settings.blocking_sends       = input.boolean_or("blocking_sends", settings.blocking_sends);
  settings.gather_per_tensor    = input.boolean_or("gather_per_tensor", settings.gather_per_tensor);
  settings.prefetch_params      = input.non_negative_number_or("prefetch_params", settings.prefetch_params);
  settings.persistence_threshold =
      input.non_negative_number_or("persistence_threshold", settings.persistence_threshold);
  if (settings.persistence_threshold > kMostElements) // DeepSpeed reads it as an int, the export writes one
    input.at("persistence_threshold").fail("at most 1e15 elements");
  if (auto distance = deepspeed_field(input, name, "max_reuse_distance", "DeepSpeed's stage3_max_reuse_distance")) {
    settings.max_reuse_distance = distance->non_negative_number();
    if (*settings.max_reuse_distance > kMostElements) // DeepSpeed reads it as an int, the export writes one
      distance->fail("at most 1e15 elements");
  }
  if (auto release = deepspeed_field(input, name, "deepspeed", "the DeepSpeed release their engine runs")) {
    const auto parsed = release->is_string() ? parse_software_release(release->string()) : std::nullopt;
    if (!parsed)
      release->fail("a DeepSpeed release \"MAJOR.MINOR\" such as \"0.3\" (or deepspeed.__version__, \"0.3.15\")");
    settings.deepspeed = *parsed;
  }
  settings.cuda_context_bytes =
      input.non_negative_number_or("cuda_context_gib", settings.cuda_context_bytes / units::kGiB) * units::kGiB;
  if (const auto buffers = input.find("communicator_buffer_mib"))
    settings.communicator_buffer_bytes = buffers->non_negative_number() * units::kMiB;
  settings.gemm_workspace_bytes =
      input.non_negative_number_or("gemm_workspace_mib", settings.gemm_workspace_bytes / units::kMiB) * units::kMiB;
  settings.allocator_fragmentation =
      input.non_negative_number_or("allocator_fragmentation", settings.allocator_fragmentation);
  settings.eager_modules = input.boolean_or("eager_modules", settings.eager_modules);
  // Megatron-LM's modules are never under autocast: turning eager modules off turns it off unless it is given.
  settings.autocast = input.boolean_or("autocast", settings.autocast && settings.eager_modules);
  if (settings.autocast && !settings.eager_modules)
    input.at("autocast").fail("false with \"eager_modules\": false (Megatron-LM's modules run in 16-bit, not under "
                              "torch.autocast)");
  return settings;
}

/// The framework's name alone when nothing is overridden.
nlohmann::json framework_json(const FrameworkSettings& s)
{
  if (s == framework_defaults(s.name))
    return framework_name(s.name);
  nlohmann::json json = {{"name", framework_name(s.name)},
                         {"bucket_params", s.bucket_params},
                         {"reduce_during_backward", s.reduce_during_backward},
                         {"buckets_first_chunk_only", s.buckets_first_chunk_only},
                         {"tied_embedding_all_reduce", s.tied_embedding_all_reduce},
                         {"scatter_gather_sends", s.scatter_gather_sends},
                         {"sends_attention_mask", s.sends_attention_mask},
                         {"partitioned_sends", s.partitioned_sends},
                         {"blocking_sends", s.blocking_sends},
                         {"gather_per_tensor", s.gather_per_tensor},
                         {"prefetch_params", s.prefetch_params},
                         {"persistence_threshold", s.persistence_threshold},
                         {"cuda_context_gib", s.cuda_context_bytes / units::kGiB},
                         {"gemm_workspace_mib", s.gemm_workspace_bytes / units::kMiB},
                         {"allocator_fragmentation", s.allocator_fragmentation},
                         {"eager_modules", s.eager_modules},
                         {"selective", std::string(models::selective_policy_name(s.selective))},
                         {"autocast", s.autocast}};
  if (s.fp32_gradient_reduction)
    json["fp32_gradient_reduction"] = *s.fp32_gradient_reduction;
  if (s.fp32_gradient_accumulation)
    json["fp32_gradient_accumulation"] = *s.fp32_gradient_accumulation;
  if (s.max_reuse_distance)
    json["max_reuse_distance"] = *s.max_reuse_distance;
  if (s.attention)
    json["attention"] = models::attention_kernel_name(*s.attention);
  if (s.pytorch.given())
    json["pytorch"] = s.pytorch.text();
  if (s.deepspeed.given())
    json["deepspeed"] = s.deepspeed.text();
  if (s.communicator_buffer_bytes)
    json["communicator_buffer_mib"] = *s.communicator_buffer_bytes / units::kMiB;
  return json;
}

} // namespace

Plan plan_from_json(const nlohmann::json& json, const std::string& origin, const Cluster& cluster,
                    const models::Workload& workload)
{
  JsonInput root(json, origin);
  if (!root.is_object())
    root.fail("an object describing a plan");
  root.allow_only({"description", "tp", "pp", "dp", "placement", "stage_starts", "micro_batch", "grad_accum",
                   "micro_batch_per_device", "grad_accum_per_device", "global_batch", "zero_stage", "schedule",
                   "recompute", "dtype", "collective_algorithm", "bucket_mib", "last_micro_batch",
                   "last_micro_batch_per_device", "layer_sharding", "framework", "virtual_stages", "microbatch_group",
                   "ep", "cp", "sequence_parallel", "seq_len", "nccl", "fp8_recipe", "fp8_param_gather"});
  Plan plan;
  if (auto seq_len = root.find("seq_len")) { // before anything that divides the sequence is checked
    plan.seq_len = seq_len->positive_int();
    if (plan.seq_len != workload.seq_len)
      seq_len->fail("the model's " + str(workload.seq_len) + " tokens per sequence (load the model at the plan's " +
                    "sequence length: --seq-len " + str(plan.seq_len) + ")");
  }
  plan.tp = root.positive_int_or("tp", 1);
  plan.pp = root.positive_int_or("pp", 1);
  plan.dp = root.positive_int_or("dp", 1);
  // Before any per-replica list is sized by them: dp = 2^31 - 1 would take gigabytes.
  for (const char* degree : {"tp", "pp", "dp", "cp"})
    if (auto value = root.find(degree); value && value->positive_int() > cluster.device_count())
      value->fail("at most " + str(cluster.device_count()) + " (the devices of cluster " + quote(cluster.name()) + ")");
  plan.cp = root.positive_int_or("cp", 1);
  if (static_cast<long long>(plan.dp) * plan.cp > cluster.device_count())
    root.at("cp").fail("at most " + str(cluster.device_count() / plan.dp) + " with dp " + str(plan.dp) +
                       " (the devices of cluster " + quote(cluster.name()) + ")");
  plan.dp *= plan.cp; // the data-parallel ranks: cp per replica

  if (auto placement = root.find("placement")) {
    plan.placement = read_int_list(*placement);
  } else {
    // Identity; degrees that do not match the cluster are reported by the validation.
    const long long world = static_cast<long long>(plan.tp) * plan.pp * plan.dp;
    if (world == cluster.device_count()) {
      plan.placement.resize(static_cast<std::size_t>(world));
      std::iota(plan.placement.begin(), plan.placement.end(), 0);
    }
  }

  plan.ep             = root.positive_int_or("ep", 1);
  plan.virtual_stages = root.positive_int_or("virtual_stages", 1);
  if (root.find("microbatch_group"))
    plan.microbatch_group = root.positive_int_or("microbatch_group", 0);
  if (plan.virtual_stages > layer_count(workload)) // before a default stage_starts is sized by it
    root.at("virtual_stages").fail("at most " + str(layer_count(workload)) + " (the layers of model " +
                                   quote(workload.name) + ")");
  if (auto starts = root.find("stage_starts"))
    plan.stage_starts = read_int_list(*starts);
  else if (static_cast<long long>(plan.pp) * plan.virtual_stages <= layer_count(workload))
    plan.stage_starts = uniform_stage_starts(layer_count(workload), plan.chunk_count());

  auto micro_batch = read_batch_field(root, "micro_batch", plan, cluster.device_count());
  if (!micro_batch)
    throw InputError(root.where() + ": missing required field 'micro_batch' (or 'micro_batch_per_device')");
  plan.micro_batch = *micro_batch;
  if (plan.micro_batch.empty())
    plan.micro_batch.assign(plan.dp, 1); // the placement is wrong; validate_plan says so below

  auto grad_accum   = read_batch_field(root, "grad_accum", plan, cluster.device_count());
  auto global_batch = root.find("global_batch");
  if (grad_accum && global_batch)
    throw InputError(root.where() + ": give either grad_accum or global_batch, not both");
  if (grad_accum) {
    plan.grad_accum = grad_accum->empty() ? std::vector<int>(plan.dp, 1) : *grad_accum;
  } else if (global_batch) {
    const int total     = global_batch->positive_int();
    const long long per = std::accumulate(plan.micro_batch.begin(), plan.micro_batch.end(), 0LL) / plan.cp;
    if (total % per != 0)
      global_batch->fail("a multiple of " + str(per) + " (the micro-batch summed over the " + str(plan.replicas()) +
                         " replicas)");
    plan.grad_accum.assign(plan.dp, static_cast<int>(total / per));
  } else {
    plan.grad_accum.assign(plan.dp, 1);
  }

  if (auto last = read_batch_field(root, "last_micro_batch", plan, cluster.device_count())) {
    if (global_batch)
      throw InputError(root.where() + ": give grad_accum, not global_batch, with last_micro_batch");
    plan.last_micro_batch = last->empty() ? plan.micro_batch : *last;
  }
  if (auto sharding = root.find("layer_sharding"))
    plan.layer_sharding = read_layer_sharding(*sharding);

  if (auto zero = root.find("zero_stage"))
    plan.zero_stage = zero->non_negative_int();
  if (auto schedule = root.find("schedule"); schedule && !parse_schedule(schedule->string(), plan.schedule))
    schedule->fail("\"gpipe\", \"1f1b\" or \"zero_bubble\"");
  if (auto recompute = root.find("recompute")) { // true/false, or "none", "selective", "full"
    const char* expected = "true, false, \"none\", \"selective\" or \"full\"";
    if (recompute->value().is_boolean()) {
      plan.recompute = recompute->boolean();
    } else {
      if (!recompute->value().is_string())
        recompute->fail(expected);
      const std::string mode = recompute->string();
      if (mode != "none" && mode != "selective" && mode != "full")
        recompute->fail(expected);
      plan.recompute           = mode == "full";
      plan.selective_recompute = mode == "selective";
    }
  }
  // "fp8": bf16 with the blocks' products in fp8 under "fp8_recipe" (models/fp8.hpp), set once the framework is.
  std::optional<models::Fp8Recipe> fp8;
  if (auto dtype = root.find("dtype")) { // a dtype some device lacks is refused by validate_plan below
    if (dtype->string() == "fp8") {
      plan.dtype = Dtype::bf16;
      fp8        = models::Fp8Recipe::delayed; // Megatron-LM's default --fp8-recipe
    } else if (!parse_dtype(dtype->string(), plan.dtype)) {
      dtype->fail("\"fp16\", \"bf16\", \"fp32\" or \"fp8\"");
    }
  } else { // the model's: refused here, where the message can name the model's field
    plan.dtype = choose_dtype("", origin + ": dtype", cluster, workload);
  }
  if (auto recipe = root.find("fp8_recipe")) {
    if (!fp8)
      recipe->fail("nothing unless \"dtype\" is \"fp8\"");
    const auto named = models::parse_fp8_recipe(recipe->string());
    if (!named || *named == models::Fp8Recipe::none)
      recipe->fail("\"delayed\", \"tensorwise\", \"mxfp8\" or \"blockwise\"");
    fp8 = *named;
  }
  if (auto algorithm = root.find("collective_algorithm");
      algorithm && !parse_algorithm(algorithm->string(), plan.collective_algorithm))
    algorithm->fail("\"ring\", \"tree\", \"hierarchical\" or \"nccl\"");
  if (const auto nccl = root.find("nccl")) {
    if (plan.collective_algorithm != CollectiveAlgorithm::nccl)
      nccl->fail("nothing unless \"collective_algorithm\" is \"nccl\" (ring and tree set NCCL_ALGO themselves)");
    plan.nccl = read_nccl_environment(*nccl);
  }
  if (auto bucket = root.find("bucket_mib"))
    plan.bucket_bytes = bucket->positive_number() * units::kMiB;
  if (auto framework = root.find("framework"))
    plan.framework = read_framework(*framework);
  if (fp8)
    plan.framework.fp8 = *fp8;
  if (auto gather = root.find("fp8_param_gather")) {
    if (!fp8)
      gather->fail("nothing unless \"dtype\" is \"fp8\"");
    plan.framework.fp8_param_gather = gather->boolean();
  }
  if (auto split = root.find("sequence_parallel"))
    plan.sequence_parallel = split->boolean();

  validate_plan(plan, cluster, workload, origin);
  return plan;
}

Plan load_plan(const std::string& file_or_preset, const Cluster& cluster, const models::Workload& workload)
{
  InputText input = read_input("plan", file_or_preset);
  return plan_from_json(JsonInput::parse_text(input.text, input.origin), input.origin, cluster, workload);
}

int seq_len_for_plan(const std::string& file_or_preset, int given, const std::string& option)
{
  const InputText input = read_input("plan", file_or_preset);
  const nlohmann::json json = JsonInput::parse_text(input.text, input.origin);
  const JsonInput root(json, input.origin);
  if (!root.is_object() || !root.has("seq_len"))
    return given; // plan_from_json names a plan that is not an object
  const int planned = root.at("seq_len").positive_int();
  if (given != 0 && given != planned)
    throw InputError(option + " " + str(given) + ": the plan " + input.origin + " was made for " + str(planned) +
                     " tokens per sequence (its seq_len); leave " + option + " out to run it so");
  return planned;
}

nlohmann::json plan_to_json(const Plan& plan)
{
  nlohmann::json json;
  json["tp"]                   = plan.tp;
  json["pp"]                   = plan.pp;
  json["dp"]                   = plan.replicas();
  json["placement"]            = plan.placement;
  json["stage_starts"]         = plan.stage_starts;
  json["micro_batch"]          = per_replica_json(plan.micro_batch, plan.cp);
  json["grad_accum"]           = per_replica_json(plan.grad_accum, plan.cp);
  json["zero_stage"]           = plan.zero_stage;
  json["schedule"]             = schedule_name(plan.schedule);
  if (plan.selective_recompute)
    json["recompute"] = "selective";
  else
    json["recompute"] = plan.recompute;
  json["dtype"]                = plan.framework.fp8 != models::Fp8Recipe::none ? "fp8" : dtype_name(plan.dtype);
  if (plan.framework.fp8 != models::Fp8Recipe::none)
    json["fp8_recipe"] = models::fp8_recipe_name(plan.framework.fp8);
  if (plan.framework.fp8_param_gather)
    json["fp8_param_gather"] = true;
  json["collective_algorithm"] = algorithm_name(plan.collective_algorithm);
  if (plan.nccl != costmodel::NcclEnvironment{}) {
    nlohmann::json& nccl = json["nccl"] = nlohmann::json::object();
    if (!plan.nccl.algorithms.empty())
      nccl["NCCL_ALGO"] = plan.nccl.algorithms;
    if (!plan.nccl.protocols.empty())
      nccl["NCCL_PROTO"] = plan.nccl.protocols;
    if (plan.nccl.min_channels > 0)
      nccl["NCCL_MIN_NCHANNELS"] = plan.nccl.min_channels;
    if (plan.nccl.max_channels > 0)
      nccl["NCCL_MAX_NCHANNELS"] = plan.nccl.max_channels;
    if (plan.nccl.buffer_bytes > 0)
      nccl["NCCL_BUFFSIZE"] = plan.nccl.buffer_bytes;
  }
  json["framework"]            = framework_json(plan.framework);
  if (plan.bucket_bytes > 0)
    json["bucket_mib"] = plan.bucket_bytes / units::kMiB;
  if (!plan.last_micro_batch.empty())
    json["last_micro_batch"] = per_replica_json(plan.last_micro_batch, plan.cp);
  if (!plan.layer_sharding.empty())
    json["layer_sharding"] = layer_sharding_json(plan.layer_sharding);
  if (plan.virtual_stages > 1)
    json["virtual_stages"] = plan.virtual_stages;
  if (plan.microbatch_group > 0)
    json["microbatch_group"] = plan.microbatch_group;
  if (plan.ep > 1)
    json["ep"] = plan.ep;
  if (plan.cp > 1)
    json["cp"] = plan.cp;
  if (plan.sequence_parallel)
    json["sequence_parallel"] = *plan.sequence_parallel;
  if (plan.seq_len > 0)
    json["seq_len"] = plan.seq_len;
  return json;
}

} // namespace hetsim::strategies
