#pragma once
/// The decisions of a parallelization plan. Virtual ranks are laid out Megatron-style:
/// rank = (stage * dp + replica) * tp + tp_rank, and `placement[rank]` is the device that runs it. With context
/// parallelism `replica` counts data-parallel ranks, cp consecutive ones per replica (Megatron's tp-cp-dp-pp order).

#include "core/dtype.hpp"
#include "costmodel/nccl_tuning.hpp"
#include "strategies/plan/framework.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetsim::strategies {

/// GPipe, 1F1B, or ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B's warm-up and memory
/// with every backward split into its input-gradient half, which the previous stage waits for, and its
/// weight-gradient half, which stage s runs s steps late to fill what would be the cool-down's bubble.
enum class PipelineSchedule { gpipe, one_f_one_b, zero_bubble };

/// Activation recompute: none, selective (Plan::selective_recompute), or full (Plan::recompute).
enum class Recompute { none, selective, full };

/// How a collective is decomposed into point-to-point transfers; `nccl`: as NCCL chooses per call, priced by its
/// own tuner (costmodel/nccl_collective.hpp), and replayed as rings where its members span nodes.
enum class CollectiveAlgorithm { ring, tree, hierarchical, nccl };

/// OSDP's choice for one layer (one operator when the model lists attention and MLP as layers): the layer's
/// parameters are cut into `slices` equal slices, of which the first `sharded` are ZeRO-3 sharded (gathered
/// before forward and backward, gradients reduce-scattered every micro-batch) and the rest replicated (gradients
/// all-reduced once per iteration, as ZeRO-0).
struct LayerSharding {
  int sharded = 0;
  int slices  = 1;
  double fraction() const { return static_cast<double>(sharded) / slices; }
  bool operator==(const LayerSharding&) const = default;
};

struct Plan {
  int tp = 1;
  int pp = 1;
  /// Data-parallel ranks per stage and tensor-parallel rank: the replicas times cp (Megatron-LM's data-parallel
  /// group with context parallelism). Gradients are reduced, and ZeRO shards, over all of them; per-replica
  /// vectors below hold one entry per data-parallel rank, equal within a context-parallel group. Plan files
  /// give the replicas as "dp" (replicas()).
  int dp = 1;
  /// Context-parallel degree (Megatron-LM's context_parallel_size): every sequence of a replica is cut over cp
  /// consecutive data-parallel ranks, each running every operator on seq_len / cp tokens (attention on its
  /// queries against all keys, load-balanced as Megatron's 2 x cp chunks), while the keys and values pass round
  /// the group as a ring (Transformer Engine's ring attention) alongside the attention kernel.
  int cp = 1;
  std::vector<int> placement;    ///< virtual rank -> device id; a bijection onto the cluster's devices
  /// First layer of each model chunk in pipeline order, strictly increasing, stage_starts[0] == 0: one chunk per
  /// stage, or pp x virtual_stages chunks of which chunk k runs on stage k % pp.
  std::vector<int> stage_starts;
  std::vector<int> micro_batch;  ///< sequences per micro-batch, per replica (replicas may differ)
  std::vector<int> grad_accum;   ///< micro-batches per iteration, per replica
  int zero_stage                     = 0;
  PipelineSchedule schedule          = PipelineSchedule::one_f_one_b;
  bool recompute                     = false; ///< full: every layer's forward again in its backward
  /// Selective: the operators the framework's policy reruns (FrameworkSettings::selective: Megatron's
  /// --recompute-granularity selective reruns non-fused attention's sequence x sequence operators, torchtitan's
  /// op-level policy all but every other product and the attention kernel; models::Operator::
  /// selectively_recomputed). Exclusive with recompute.
  bool selective_recompute           = false;
  Dtype dtype                        = Dtype::fp16;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::ring;
  /// NCCL's environment under `nccl` (the plan's "nccl": NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS); the
  /// export sets it for the job.
  costmodel::NcclEnvironment nccl;
  double bucket_bytes                = 0; ///< gradient bucket for ZeRO 0-2; 0: the framework's (gradient_bucket_bytes)
  FrameworkSettings framework;
  /// Poplar's "last batch size": sequences in the last micro-batch of each replica, at most micro_batch[r].
  /// Empty: every micro-batch has micro_batch[r] sequences.
  std::vector<int> last_micro_batch;
  /// Per-layer sharding (OSDP), one entry per layer, with zero_stage 0. Empty: zero_stage applies to every layer.
  std::vector<LayerSharding> layer_sharding;
  /// Model chunks per device (Megatron-LM's virtual pipeline stages): every micro-batch goes round the pipeline
  /// this many times, and 1F1B becomes Megatron's interleaved 1F1B. 1: one contiguous chunk per stage.
  int virtual_stages = 1;
  /// Interleaved 1F1B: micro-batches that pass each chunk together before the next chunk (Megatron-LM's
  /// microbatch_group_size_per_vp_stage, from pp to grad_accum); the last group takes what is left. 0: pp.
  int microbatch_group = 0;
  int interleave_group() const { return microbatch_group > 0 ? microbatch_group : pp; }
  /// Whether interleaved 1F1B can run `micro_batches`: at least one group, and a last group that is whole or
  /// at least pp long. Megatron-LM raises on anything else at its first step (pipeline_parallel/schedules.py,
  /// forward_backward_pipelining_with_interleaving: "The remainder of M ... should be 0, or larger than or
  /// equal to the pipeline-parallel size"); with the default group of pp, M must be a multiple of pp.
  bool interleaves(int micro_batches) const
  {
    const int last = micro_batches % interleave_group();
    return micro_batches >= interleave_group() && (last == 0 || last >= pp);
  }
  /// Expert-parallel degree (Megatron-LM's expert_model_parallel_size, carved out of dp): replicas form groups of
  /// ep consecutive ones that divide every sparse block's routed experts among them and exchange tokens by
  /// all-to-all. An expert's gradients are reduced over the dp / ep replicas that hold it.
  int ep = 1;
  /// Megatron's sequence parallelism (Korthikanti et al. 2022): with tp > 1 the operators between the
  /// tensor-parallel products (norms, dropout-adds) run on 1/tp of the sequence and keep 1/tp of their
  /// activations, and each all-reduce becomes a reduce-scatter and an all-gather. Unset: the framework's
  /// scatter-gather (on for Megatron-LM, off for DeepSpeed and FSDP).
  std::optional<bool> sequence_parallel;
  /// Tokens per sequence the plan was made for (search writes the workload's), so that a plan file simulated,
  /// run or exported later trains on the sequences it was chosen for. 0: unsaid (the model's).
  int seq_len = 0;

  int world_size() const { return tp * pp * dp; }
  /// Model replicas: data-parallel ranks over cp (what a plan file calls dp).
  int replicas() const { return dp / cp; }
  /// The first data-parallel rank of `rank`'s context-parallel group (itself when cp is 1).
  int context_group_first(int rank) const { return rank - rank % cp; }
  /// Model chunks over all stages (pp x virtual_stages), the entries of stage_starts.
  int chunk_count() const { return pp * virtual_stages; }
  /// The stage that runs chunk `chunk`.
  int chunk_stage(int chunk) const { return chunk % pp; }
  /// The chunks of `stage`, in pipeline order: stage, stage + pp, ...
  std::vector<int> stage_chunks(int stage) const;
  /// The layer ranges [first, end) of those chunks, in model order (one range without virtual stages).
  std::vector<std::pair<int, int>> stage_ranges(int stage, int layer_count) const;
  int rank(int stage, int replica, int tp_rank) const { return (stage * dp + replica) * tp + tp_rank; }
  int device(int stage, int replica, int tp_rank) const { return placement[rank(stage, replica, tp_rank)]; }
  /// One past the last layer of chunk `chunk` (of stage `chunk` when virtual_stages is 1).
  int stage_end(int chunk, int layer_count) const;
  /// Sequences per iteration over all replicas (a context-parallel group's ranks share theirs).
  long long global_batch() const;
  /// Sequences in micro-batch `m` (0-based) of data-parallel rank `replica` (with cp: the part it holds of each).
  int micro_batch_samples(int replica, int m) const;
  /// Fraction of `layer`'s parameters that are ZeRO-3 sharded: 1 for every layer with zero_stage 3 and dp > 1,
  /// the layer's share under layer_sharding, 0 otherwise.
  double sharded_fraction(int layer) const;
  /// Whether layer_sharding shards anything over more than one replica.
  bool shards_layers() const;

  /// Whether tensor-parallel groups split the sequence (sequence_parallel, or the framework's default).
  bool splits_sequence() const { return tp > 1 && sequence_parallel.value_or(framework.scatter_gather_sends); }
  /// The expert-parallel group of `replica`, and its position in it.
  int expert_group(int replica) const { return replica / ep; }
  int expert_rank(int replica) const { return replica % ep; }

  /// Whether the data-parallel ranks each update 1/dp of the parameters and all-gather the rest after the step:
  /// ZeRO 1-3, and DeepSpeed's BF16_Optimizer without ZeRO (its fp32 partitions, bf16_optimizer.py).
  bool shards_optimizer_states() const
  {
    return zero_stage >= 1 || uses_bf16_optimizer(framework, dtype, zero_stage);
  }

  /// Bytes per parameter of gradient reductions: 4 when the framework reduces in fp32, else the dtype's.
  double gradient_reduction_bytes() const;
  /// Gradient bucket size in bytes: bucket_bytes if given, else the framework's bucket of parameters at the
  /// reduction's bytes, else PyTorch DDP's 25 MiB.
  double gradient_bucket_bytes() const;
  /// Whether chunk `chunk` (stage `chunk` without virtual stages) reduces its gradients in buckets of
  /// gradient_bucket_bytes, or in one (FrameworkSettings::buckets_first_chunk_only).
  bool buckets_chunk(int chunk) const
  {
    return !framework.buckets_first_chunk_only || (chunk == 0 && framework.reduce_during_backward);
  }

  /// Which recompute the plan runs.
  Recompute recompute_choice() const
  {
    return recompute ? Recompute::full : selective_recompute ? Recompute::selective : Recompute::none;
  }
  /// Sets recompute and selective_recompute to `choice`.
  void set_recompute(Recompute choice)
  {
    recompute           = choice == Recompute::full;
    selective_recompute = choice == Recompute::selective;
  }

  bool operator==(const Plan&) const = default;
};

/// "gpipe", "1f1b" or "zero_bubble", as in plan files.
std::string_view schedule_name(PipelineSchedule schedule);
/// "ring", "tree", "hierarchical" or "nccl", as in plan files.
std::string_view algorithm_name(CollectiveAlgorithm algorithm);
/// Inverses of the two above; return false for an unknown name.
bool parse_schedule(std::string_view name, PipelineSchedule& out);
bool parse_algorithm(std::string_view name, CollectiveAlgorithm& out);

} // namespace hetsim::strategies
