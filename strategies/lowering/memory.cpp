#include "strategies/lowering/memory.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/attention_speed.hpp"
#include "costmodel/nccl_memory.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/pass_order.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

namespace hetsim::strategies {
namespace {

/// "19.3 GiB", "16 GiB".
std::string gib(double bytes)
{
  char text[64];
  const double value = bytes / units::kGiB;
  if (value > 0 && value < 0.95)
    std::snprintf(text, sizeof text, "%.2f GiB", value);
  else if (std::fabs(value - std::round(value)) < 0.05)
    std::snprintf(text, sizeof text, "%.0f GiB", value);
  else
    std::snprintf(text, sizeof text, "%.1f GiB", value);
  return text;
}

/// The stages `stage` sends to or receives from. With virtual stages the last stage sends on to the first: every
/// stage has two neighbours (one when pp is 2).
std::set<int> pipeline_neighbours(const Plan& plan, int stage)
{
  std::set<int> neighbours;
  if (plan.pp > 1 && (stage > 0 || plan.virtual_stages > 1))
    neighbours.insert((stage + plan.pp - 1) % plan.pp);
  if (plan.pp > 1 && (stage < plan.pp - 1 || plan.virtual_stages > 1))
    neighbours.insert((stage + 1) % plan.pp);
  return neighbours;
}

/// Communicators a device of `stage` takes part in: its tensor- and data-parallel groups, one per pipeline
/// neighbour.
int communicators(const Plan& plan, int stage)
{
  const int neighbours = static_cast<int>(pipeline_neighbours(plan, stage).size());
  // Expert parallelism adds its all-to-all group and, with more than one group, the experts' gradient group.
  const int experts = plan.ep > 1 ? 1 + (plan.dp > plan.ep ? 1 : 0) : 0;
  return (plan.tp > 1 ? 1 : 0) + (plan.dp > 1 ? 1 : 0) + neighbours + experts;
}

/// The device rank (stage, replica, tp_rank) runs on: the plan's placement, or before a planner places the plan
/// the device of the same number (the plan's default placement).
int placed_device(const Plan& plan, const Cluster& cluster, int stage, int replica, int tp_rank)
{
  const int rank = plan.rank(stage, replica, tp_rank);
  return static_cast<int>(plan.placement.size()) == plan.world_size() ? plan.placement[rank]
                                                                      : rank % cluster.device_count();
}

/// What NCCL holds on a device of `stage` and `replica` (costmodel/nccl_memory.hpp), per communicator: the
/// tensor- and data-parallel ones (the latter `data_parallel` when known, else worked out), a point-to-point
/// link per pipeline neighbour, the experts' all-to-all peers and gradient group. Where the plan gives
/// communicator_buffer_mib, that for each communicator, as the total.
NcclMemory communicator_bytes(const Plan& plan, const Problem& problem, int stage, int replica,
                              std::optional<double> data_parallel)
{
  NcclMemory nccl;
  if (plan.framework.communicator_buffer_bytes) {
    nccl.total = *plan.framework.communicator_buffer_bytes * communicators(plan, stage);
    return nccl;
  }
  HETSIM_ASSERT(problem.cluster != nullptr);
  const Cluster& cluster = *problem.cluster;
  using costmodel::NcclUse;
  auto device = [&](int s, int r) { return placed_device(plan, cluster, s, r, 0); };
  auto pair   = [&](int a, int b) {
    return costmodel::nccl_communicator_bytes(cluster, {a, b}, NcclUse::point_to_point, plan.nccl);
  };
  std::vector<int> group;
  for (int t = 0; t < plan.tp; ++t)
    group.push_back(placed_device(plan, cluster, stage, replica, t));
  nccl.tensor_parallel = costmodel::nccl_communicator_bytes(cluster, group, NcclUse::collectives, plan.nccl);
  nccl.data_parallel   = data_parallel ? *data_parallel : data_parallel_communicator_bytes(plan, cluster, stage);
  const int self = device(stage, replica);
  for (int neighbour : pipeline_neighbours(plan, stage))
    nccl.pipeline += pair(self, device(neighbour, replica));
  if (plan.ep > 1) {
    const int first = replica - plan.expert_rank(replica);
    for (int q = first; q < first + plan.ep; ++q)
      if (q != replica)
        nccl.experts += pair(self, device(stage, q));
    group.clear();
    for (int q = plan.expert_rank(replica); q < plan.dp; q += plan.ep)
      group.push_back(device(stage, q));
    nccl.experts += costmodel::nccl_communicator_bytes(cluster, group, NcclUse::collectives, plan.nccl);
  }
  nccl.total = nccl.tensor_parallel + nccl.data_parallel + nccl.pipeline + nccl.experts;
  return nccl;
}

/// Layer ranges [first, end) a device holds: its model chunks.
using Chunks = std::vector<std::pair<int, int>>;

/// The most activation bytes per sample the stage keeps at once under interleaved 1F1B: the pass order's
/// forwards not yet matched by their backward, each chunk's `bytes_per_sample` apiece.
double interleaved_in_flight(const Plan& plan, int stage, int replica, const std::vector<double>& bytes_per_sample)
{
  double live = 0, peak = 0;
  for (const costmodel::PipelineStep& step :
       pass_order(plan.schedule, plan.pp, stage, plan.grad_accum[replica], plan.virtual_stages,
                  plan.microbatch_group)) {
    live += step.backward ? -bytes_per_sample[step.chunk] : bytes_per_sample[step.chunk];
    peak = std::max(peak, live);
  }
  return peak;
}

/// `data_parallel`: NCCL's bytes for the stage's data-parallel communicator, when already worked out.
/// `layer_kinds`: models::layer_kinds of the workload, when the caller keeps them.
DeviceMemory device_memory(const Plan& plan, const Problem& problem, int stage, const Chunks& chunks, int replica,
                           std::optional<double> data_parallel = std::nullopt,
                           const std::vector<int>* layer_kinds = nullptr);

} // namespace

double optimizer_bytes_per_parameter(Dtype dtype)
{
  return dtype == Dtype::fp32 ? 8 : 12;
}

DeviceMemory zero_model_states(double params, double largest_two_params, int zero_stage, int dp, Dtype dtype)
{
  const double weight_bytes    = dtype_bytes(dtype); // per parameter, weights and gradients
  const double optimizer_bytes = optimizer_bytes_per_parameter(dtype);
  const bool shard             = dp > 1;
  DeviceMemory m;
  m.parameter_bytes = weight_bytes * params;
  m.gradient_bytes  = weight_bytes * params;
  m.optimizer_bytes = optimizer_bytes * params;
  if (shard && zero_stage >= 1)
    m.optimizer_bytes /= dp;
  if (shard && zero_stage >= 2)
    m.gradient_bytes /= dp;
  if (shard && zero_stage >= 3)
    m.parameter_bytes = m.parameter_bytes / dp + weight_bytes * largest_two_params;
  return m;
}

double autocast_weight_elements(const models::Layer& layer, int tp)
{
  double elements = 0;
  for (const models::Operator& op : layer.operators)
    if (op.kind == models::OperatorKind::linear)
      elements += op.n * op.k * std::max(1.0, op.experts) / tp;
  return elements;
}

DeviceMemory autocast_model_states(DeviceMemory states, double cast_elements, Dtype dtype)
{
  if (dtype == Dtype::fp32)
    return states;
  const double weight_bytes = dtype_bytes(dtype);
  states.parameter_bytes    = states.parameter_bytes * 4 / weight_bytes + 2 * cast_elements;
  states.gradient_bytes *= 4 / weight_bytes;
  states.optimizer_bytes *= 8.0 / 12.0; // two fp32 moments, not a master copy besides
  return states;
}

DeviceMemory stage_device_memory(const Plan& plan, const Problem& problem, int stage, int first, int end, int replica,
                                 std::optional<double> data_parallel_bytes, const std::vector<int>* layer_kinds)
{
  HETSIM_ASSERT(plan.virtual_stages == 1); // one range is one chunk
  return device_memory(plan, problem, stage, {{first, end}}, replica, data_parallel_bytes, layer_kinds);
}

double data_parallel_communicator_bytes(const Plan& plan, const Cluster& cluster, int stage)
{
  std::vector<int> group;
  for (int r = 0; r < plan.dp; ++r)
    group.push_back(placed_device(plan, cluster, stage, r, 0));
  return costmodel::nccl_communicator_bytes(cluster, group, costmodel::NcclUse::collectives, plan.nccl);
}

namespace {

/// Per sample, what a layer's fused attention keeps on `gpu` beyond its own figures where that GPU runs a kernel
/// that keeps the scores instead (Transformer Engine below sm80 takes its unfused attention), and the backward's
/// score gradients: the unfused operators' 5as^2 kept (softmax output, dropout mask and output; Korthikanti et
/// al. 2022, eq. 1) and 4as^2 short-lived. Zero where the fused kernel runs, or with no GPU known yet.
struct ScoreBytes {
  double kept = 0, transient = 0;
};
ScoreBytes fallback_score_bytes(const models::Layer& layer, const GpuSpec* gpu)
{
  ScoreBytes bytes;
  if (!gpu)
    return bytes;
  for (const models::Operator& op : layer.operators)
    if (op.kind == models::OperatorKind::fused_attention &&
        models::keeps_scores(costmodel::attention_run(op.attention, *gpu, op.explicit_mask).kernel)) {
      bytes.kept += 5 * op.count * op.m * op.n;
      bytes.transient = std::max(bytes.transient, 4 * op.count * op.m * op.n);
    }
  return bytes;
}

DeviceMemory device_memory(const Plan& plan, const Problem& problem, int stage, const Chunks& chunks, int replica,
                           std::optional<double> data_parallel, const std::vector<int>* layer_kinds)
{
  const auto& layers            = problem.workload->layers;
  // The GPU this stage's replica runs on, once the plan places it: the attention kernel that runs depends on it.
  const GpuSpec* gpu = problem.cluster && static_cast<int>(plan.placement.size()) == plan.world_size()
                           ? &problem.cluster->gpu_of(plan.device(stage, replica, 0))
                           : nullptr;
  const double weight_bytes     = dtype_bytes(plan.dtype); // per parameter, weights and gradients
  const double optimizer_bytes  = optimizer_bytes_per_parameter(plan.dtype);
  const double activation_scale = dtype_bytes(plan.dtype) / 2.0; // layer figures are 16-bit

  double params     = 0; // per device, after the tensor-parallel split, with its own experts only
  double experts    = 0; // of params, the routed experts' (ZeRO shards them over the dp / ep replicas holding them)
  double largest[2] = {0, 0};
  double saved = 0, boundary = 0, largest_saved = 0, transient = 0; // activation bytes per sample, per device
  const auto& shape        = problem.workload->shape;
  const bool autocast      = shape && shape->autocast;
  // Per sample, what layers recompute does not cover keep: Hugging Face's gradient_checkpointing_enable()
  // checkpoints the decoder blocks only, and the embedding and the head (the loss's fp32 log-probabilities) keep
  // what they save (models::recomputed).
  double unchecked         = 0;
  double cast_weights      = 0; // per device: elements of the weights autocast keeps a 16-bit copy of
  double fp8_weights       = 0; // per device: elements of the weights whose products run in fp8
  const bool split = plan.splits_sequence() || plan.tp == 1;
  std::vector<double> chunk_saved, chunk_boundary;                    // the same per chunk
  for (const auto& [first, end] : chunks) {
    chunk_saved.push_back(saved);
    chunk_boundary.push_back(boundary);
    for (int l = first, run = 1; l < end; l += run) {
      // A run of layers of one kind counts as its first, `run` times over (added one by one, so that the sums
      // are those of a layer-by-layer count to the last bit): a 10,000-layer model's range costs its kinds.
      run = 1;
      while (layer_kinds && l + run < end && (*layer_kinds)[l + run] == (*layer_kinds)[l])
        ++run;
      const double p = (layers[l].params - layers[l].expert_params + layers[l].expert_params / plan.ep) / plan.tp;
      // Without sequence parallelism the replicated operators keep whole activations on every TP member, and
      // the block's input and output are whole too.
      const double replicated = split ? 0 : layers[l].replicated_saved_bytes_per_sample;
      const ScoreBytes scores = fallback_score_bytes(layers[l], gpu); // selective recompute reruns them
      const double held = plan.selective_recompute ? layers[l].selective_saved_bytes_per_sample
                                                   : layers[l].saved_activation_bytes_per_sample + scores.kept;
      const double kept       = (held - replicated) / plan.tp + replicated;
      const bool recomputed   = models::recomputed(*problem.workload, l);
      const double cast       = autocast ? autocast_weight_elements(layers[l], plan.tp) : 0;
      std::vector<double> fp8; // its fp8 weights, operator by operator
      for (const models::Operator& op : layers[l].operators)
        if (op.fp8)
          fp8.push_back(op.params / (op.experts > 0 ? plan.ep : 1) / plan.tp);
      for (int copy = 0; copy < run; ++copy) {
        params += p;
        experts += layers[l].expert_params / plan.ep / plan.tp;
        if (p > largest[0]) {
          largest[1] = largest[0];
          largest[0] = p;
        } else if (p > largest[1]) {
          largest[1] = p;
        }
        saved += kept;
        if (recomputed)
          boundary += layers[l].activation_bytes_per_sample / (split ? plan.tp : 1);
        else
          unchecked += kept;
        cast_weights += cast;
        for (double weights : fp8)
          fp8_weights += weights;
      }
      if (recomputed)
        largest_saved = std::max(largest_saved, kept);
      transient = std::max(transient, std::max(layers[l].transient_bytes_per_sample, scores.transient) / plan.tp);
    }
    chunk_saved.back()    = saved - chunk_saved.back();
    chunk_boundary.back() = boundary - chunk_boundary.back();
  }

  // With a tied embedding and pipelining, the last stage holds a second copy of the embedding for its output
  // product, with its gradient and optimizer states (DeepSpeed's TiedLayerSpec, Megatron-LM's output-layer copy
  // of the word embeddings), which the two stages' all-reduce keeps equal.
  const bool last_stage = stage == plan.pp - 1 && std::any_of(chunks.begin(), chunks.end(), [&](const auto& chunk) {
                            return chunk.second == static_cast<int>(layers.size());
                          });
  if (plan.pp > 1 && last_stage && plan.framework.tied_embedding_all_reduce && shape && shape->tied_embeddings)
    params += static_cast<double>(shape->vocab) * shape->hidden / plan.tp;
  // DeepSpeed's BF16_Optimizer shards its fp32 states as ZeRO-1 does, ZeRO or not (Plan::shards_optimizer_states).
  const int sharding = plan.shards_optimizer_states() ? std::max(1, plan.zero_stage) : plan.zero_stage;
  DeviceMemory m     = zero_model_states(params, largest[0] + largest[1], sharding, plan.dp, plan.dtype);
  if (plan.ep > 1) { // ZeRO-3 is refused with ep, so the largest layers' buffers do not matter here
    const DeviceMemory dense = zero_model_states(params - experts, 0, sharding, plan.dp, plan.dtype);
    const DeviceMemory held  = zero_model_states(experts, 0, sharding, plan.dp / plan.ep, plan.dtype);
    m.parameter_bytes = dense.parameter_bytes + held.parameter_bytes;
    m.gradient_bytes  = dense.gradient_bytes + held.gradient_bytes;
    m.optimizer_bytes = dense.optimizer_bytes + held.optimizer_bytes;
  }
  if (plan.shards_layers()) {
    // OSDP: sharded slices keep 1/dp of their states, plus a buffer for the two largest gathered slices (the
    // one computing and the one prefetched); replicated slices keep everything, as ZeRO-0.
    double sharded = 0, slice[2] = {0, 0};
    for (const auto& [first, end] : chunks) {
      for (int l = first; l < end; ++l) {
        const LayerSharding& choice = plan.layer_sharding[l];
        if (choice.sharded == 0)
          continue;
        const double p = layers[l].params / plan.tp;
        sharded += p * choice.fraction();
        const double one = p / choice.slices;
        for (int copy = 0; copy < std::min(choice.sharded, 2); ++copy) { // a layer's next slice is prefetched too
          if (one > slice[0]) {
            slice[1] = slice[0];
            slice[0] = one;
          } else if (one > slice[1]) {
            slice[1] = one;
          }
        }
      }
    }
    const double kept = params - sharded + sharded / plan.dp;
    m.parameter_bytes = weight_bytes * (kept + slice[0] + slice[1]);
    m.gradient_bytes  = weight_bytes * kept;
    m.optimizer_bytes = optimizer_bytes * kept;
  }

  if (autocast)
    m = autocast_model_states(m, cast_weights, plan.dtype);
  // Transformer Engine caches each fp8 weight and its transpose across a step's micro-batches (the backward's
  // products read the transpose): two bytes a weight beside its 16-bit copy, whatever ZeRO shards. Kept in fp8
  // (fp8_param_gather), those two bytes are the weight's only copy (row-wise and column-wise data, "both managed
  // for non-transposable 1-D quantization recipes like MXFP8": Megatron-LM docs/user-guide/features/
  // megatron_fsdp.md:561 at d98e8a6).
  m.parameter_bytes += (plan.framework.fp8_param_gather ? 2 - weight_bytes : 2) * fp8_weights;
  // Megatron-LM accumulating in fp32 keeps its gradients in fp32 main-gradient buffers, not in the dtype.
  const FrameworkSettings& framework = plan.framework;
  if (framework.name == Framework::megatron && reduces_in_fp32(framework, plan.dtype))
    m.gradient_bytes *= 4 / weight_bytes;
  // DeepSpeed's BF16_Optimizer (v0.17.4, deepspeed/runtime/bf16_optimizer.py) keeps every bf16 .grad (zeroed, not
  // freed: l.445-461) beside a full fp32 accumulator (l.165-166); its fp32 master weights and Adam moments are
  // only its 1/dp partition's (l.151-159, l.199), sharded above.
  const bool bf16_optimizer = uses_bf16_optimizer(framework, plan.dtype, plan.zero_stage);
  if (bf16_optimizer)
    m.gradient_bytes *= (weight_bytes + 4) / weight_bytes;

  const int accum      = plan.grad_accum[replica];
  // A context-parallel rank keeps what its 1/cp of each sequence saves.
  const double samples = static_cast<double>(plan.micro_batch[replica]) * activation_scale / plan.cp;
  if (plan.virtual_stages > 1) { // chunks of unequal size: which ones are in flight matters
    m.activation_bytes = plan.recompute ? interleaved_in_flight(plan, stage, replica, chunk_boundary) + largest_saved
                                        : interleaved_in_flight(plan, stage, replica, chunk_saved);
    m.activation_bytes *= samples;
  } else {
    // Zero bubble (ZB-H1) holds 1F1B's pp - stage micro-batches whole, and stage s runs s weight-gradient steps
    // late, keeping those micro-batches' weight-gradient inputs: counted whole, pp on every stage.
    const int in_flight = plan.schedule == PipelineSchedule::gpipe         ? accum
                          : plan.schedule == PipelineSchedule::zero_bubble ? std::min(accum, plan.pp)
                                                                           : std::min(accum, plan.pp - stage);
    m.activation_bytes  = plan.recompute ? ((boundary + unchecked) * in_flight + largest_saved) * samples
                                         : saved * in_flight * samples;
  }

  if (!problem.workspace_bytes) { // a workspace the user gives stands for these
    m.nccl            = communicator_bytes(plan, problem, stage, replica, data_parallel);
    m.framework_bytes = framework.cuda_context_bytes + framework.gemm_workspace_bytes + m.nccl.total;
    // DeepSpeed's ZeRO-1/2 optimizer copies gradients into a contiguous bucket of reduce_bucket_size elements as
    // the backward makes them (contiguous_gradients, true by default), two with overlap_comm, whatever the
    // model's size (v0.17.4, zero/stage_1_and_2.py:2144-2161).
    if (runs_deepspeed_engine(framework.name) && (plan.zero_stage == 1 || plan.zero_stage == 2) && !bf16_optimizer)
      m.framework_bytes += plan.gradient_bucket_bytes() / plan.gradient_reduction_bytes() * weight_bytes *
                           (framework.reduce_during_backward ? 2 : 1);
  }
  // One layer's working memory at a time, with the loss's fp32 logit gradient and attention score gradients.
  const double training = framework.allocator_fragmentation * m.activation_bytes + transient * samples;
  // The step converts the gradients of the parameters it updates to fp32 (activations are freed by then).
  // DeepSpeed's fp16 optimizer without ZeRO (FP16_Optimizer.step, deepspeed/runtime/fp16/fused_optimizer.py)
  // converts them tensor by tensor into a list and flattens the list: two fp32 copies are alive at once.
  const double updated_params = m.optimizer_bytes / optimizer_bytes;
  const double fp32_copies =
      runs_deepspeed_engine(framework.name) && plan.dtype == Dtype::fp16 && plan.zero_stage == 0 ? 2 : 1;
  double step =
      autocast || reduces_in_fp32(framework, plan.dtype) ? 0 : 4 * fp32_copies * updated_params - m.activation_bytes;
  // BF16_Optimizer's steps read its fp32 accumulator in place; its data-parallel all-reduce flattens each bucket of
  // up to 5e8 gradients into a new fp32 tensor and casts that to bf16 for NCCL (engine.py:2601-2626, with
  // MEMORY_OPT_ALLREDUCE_SIZE, l.122).
  if (bf16_optimizer)
    step = plan.dp > 1 ? std::min(m.parameter_bytes / weight_bytes, 5e8) * (4 + weight_bytes) - m.activation_bytes : 0;
  m.transient_bytes = std::max({training, step, 0.0});
  // A one-device PyTorch loop's optimizer.zero_grad() sets the gradients to None (its default since PyTorch
  // 2.0): backward allocates them as it frees the activations they follow, so at the step's peak, the loss's
  // backward with every activation alive, none exists yet. Only what outgrows the activations adds to it.
  // DeepSpeed's BF16_Optimizer zeroes its gradients instead and keeps them, with its fp32 copy, all along.
  if (shape && shape->eager && plan.dp == 1 && !bf16_optimizer)
    m.gradient_bytes = std::max(0.0, m.gradient_bytes - m.activation_bytes - m.transient_bytes);
  return m;
}

} // namespace

std::vector<DeviceMemory> plan_memory(const Plan& plan, const Problem& problem)
{
  HETSIM_ASSERT(problem.cluster != nullptr && problem.workload != nullptr);
  const Cluster& cluster = *problem.cluster;
  const int layer_count  = static_cast<int>(problem.workload->layers.size());
  HETSIM_ASSERT(static_cast<int>(plan.placement.size()) == plan.world_size());
  HETSIM_ASSERT(static_cast<int>(plan.stage_starts.size()) == plan.chunk_count());

  std::vector<DeviceMemory> memory(cluster.device_count());
  const std::vector<int> alike = alike_replicas(plan, cluster, AlikeFor::memory); // alike replicas need as much
  for (int s = 0; s < plan.pp; ++s) {
    // One data-parallel communicator for all the stage's replicas.
    const double data_parallel = data_parallel_communicator_bytes(plan, cluster, s);
    for (int r = 0; r < plan.dp; ++r) {
      const DeviceMemory stage =
          alike[r] != r ? memory[plan.device(s, alike[r], 0)]
                        : device_memory(plan, problem, s, plan.stage_ranges(s, layer_count), r, data_parallel);
      for (int t = 0; t < plan.tp; ++t)
        memory[plan.device(s, r, t)] = stage;
    }
  }
  // What stage_device_memory leaves empty: which device, and what it offers.
  for (int d = 0; d < cluster.device_count(); ++d) {
    memory[d].device          = d;
    memory[d].gpu             = cluster.gpu_of(d).name;
    memory[d].gpu_origin      = cluster.device(d).gpu_origin;
    memory[d].workspace_bytes = problem.workspace_bytes.value_or(0);
    memory[d].capacity_bytes  = problem.memory_capacity(d);
  }
  return memory;
}

std::string gpu_origin_clause(const std::string& gpu_origin)
{
  return gpu_origin.empty() ? "" : "; its GPU is set by " + gpu_origin;
}

const DeviceMemory* largest_overflow(const std::vector<DeviceMemory>& memory)
{
  const DeviceMemory* worst = nullptr;
  for (const auto& m : memory)
    if (m.over_bytes() > 0 && (!worst || m.over_bytes() > worst->over_bytes()))
      worst = &m;
  return worst;
}

MemoryVerdict memory_verdict(const std::vector<DeviceMemory>& memory)
{
  MemoryVerdict verdict;
  for (const DeviceMemory& m : memory)
    if (m.capacity_bytes > 0 && (!verdict.fullest || m.total_bytes() / m.capacity_bytes >
                                                         verdict.fullest->total_bytes() / verdict.fullest->capacity_bytes))
      verdict.fullest = &m;
  if (!verdict.fullest)
    return verdict;
  const double share = verdict.fullest->total_bytes() / verdict.fullest->capacity_bytes;
  verdict.kind = share > 1 ? MemoryVerdict::Kind::does_not_fit
               : share > kMemoryAtRiskShare ? MemoryVerdict::Kind::at_risk
                                            : MemoryVerdict::Kind::fits;
  return verdict;
}

const char* MemoryVerdict::name() const
{
  switch (kind) {
  case Kind::fits: return "fits";
  case Kind::at_risk: return "at risk";
  case Kind::does_not_fit: return "does not fit";
  }
  return "";
}

std::string MemoryVerdict::text() const
{
  if (!fullest)
    return name();
  char share[32];
  std::snprintf(share, sizeof share, " (%.0f%%)", 100 * fullest->total_bytes() / fullest->capacity_bytes);
  std::string line = std::string(name()) + ": device " + std::to_string(fullest->device) + " (" + fullest->gpu +
                     ") needs " + gib(fullest->total_bytes()) + " of " + gib(fullest->capacity_bytes) + share;
  if (kind == Kind::at_risk)
    line += ", within the memory model's measured error of capacity (-4% to +9%) and the caching allocator's "
            "fragmentation near it: a run may fail";
  return line;
}

void check_memory(const std::vector<DeviceMemory>& memory)
{
  const DeviceMemory* worst = largest_overflow(memory);
  if (!worst)
    return;
  const auto over_count =
      std::count_if(memory.begin(), memory.end(), [](const DeviceMemory& m) { return m.over_bytes() > 0; });
  const std::pair<const char*, double> terms[] = {
      {"parameters", worst->parameter_bytes}, {"gradients", worst->gradient_bytes},
      {"optimizer", worst->optimizer_bytes},   {"activations", worst->activation_bytes},
      {"framework", worst->framework_bytes},   {"transient", worst->transient_bytes},
      {"workspace", worst->workspace_bytes}};
  const auto largest = std::max_element(std::begin(terms), std::end(terms),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string message = "plan does not fit: device " + std::to_string(worst->device) + " (" + worst->gpu + ") needs " +
                        gib(worst->total_bytes()) + " of " + gib(worst->capacity_bytes) + " (" +
                        gib(worst->over_bytes()) + " over), most of it " + largest->first + ":";
  for (const auto& [name, bytes] : terms)
    message += std::string(name == terms[0].first ? " " : ", ") + name + " " + gib(bytes);
  if (over_count > 1)
    message +=
        "; " + std::to_string(over_count - 1) + " other device" + (over_count > 2 ? "s are" : " is") + " over too";
  message += gpu_origin_clause(worst->gpu_origin);
  throw InfeasiblePlan(message);
}

} // namespace hetsim::strategies
