#pragma once
/// A Plan lowered to what each device does, in order: the IR shared by the simulator and the executors.
///
/// Every device runs its tasks on streams. Tasks of the compute, tensor-parallel, data-parallel, expert-parallel
/// and context-parallel streams run one after the other in list order (like CUDA streams / NCCL communicators); pipeline send/recv tasks start as
/// soon as their dependencies are met, except that sends from one device to the same peer go out one at a time
/// in issue order. A task also waits for all of its `deps`.

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace hetsim::strategies {

enum class TaskKind {
  forward,
  backward,
  optimizer,
  send,
  recv,
  all_reduce,
  reduce_scatter,
  all_gather,
  all_to_all, ///< every member sends bytes / n to every other member (expert parallelism's token exchange)
};
/// Which part of a backward a backward task runs: all of it, or one of the halves a zero-bubble schedule splits
/// it into (the input gradients the previous stage waits for, the weight gradients run later).
enum class BackwardPart { whole, input_gradients, weight_gradients };
/// All but the pipeline run their tasks in queue order; the pipeline's start when ready.
enum class Stream { compute, tensor_parallel, data_parallel, expert_parallel, context_parallel, pipeline };
inline constexpr int kStreamCount = 6;

std::string_view task_kind_name(TaskKind kind);
std::string_view stream_name(Stream stream);
bool is_collective(TaskKind kind);
bool is_p2p(TaskKind kind);     ///< send or recv
bool is_compute(TaskKind kind); ///< forward, backward or optimizer

struct Task {
  int id = 0; ///< index in Schedule::tasks; stable for the same plan and inputs
  TaskKind kind = TaskKind::forward;
  Stream stream = Stream::compute;
  int device    = 0;
  // Where in the plan it comes from (for names and for the executors).
  int stage       = -1;
  int replica     = -1;
  int tp_rank     = -1;
  int micro_batch = -1; ///< index of the micro-batch, -1 when not tied to one
  int chunk       = 0;  ///< which of the stage's model chunks (0 without virtual stages)
  int first_layer = -1; ///< layers [first_layer, first_layer + layer_count)
  int layer_count = 0;
  int piece       = 0;  ///< which part of a split layer (compute, TP all-reduce) or which gradient bucket
  /// Compute: the layers' pass is split into this many parts around its communications...
  int pieces      = 1;
  /// ...of which this one runs this fraction: its operators' share of the layer's FLOPs (equal parts when the
  /// layer has no operators or FLOPs).
  double share    = 1;
  /// ...and this part reruns the forward of a recomputing backward (with `recomputes`: the task holds the
  /// rerun forward and the backward itself).
  bool recomputed = false;
  bool recomputes = false;
  /// A backward that first reruns the forward of its selectively recomputed operators (Plan::selective_recompute).
  bool recomputes_attention = false;
  BackwardPart part = BackwardPart::whole; ///< backward compute tasks: what of the backward they run
  // Work.
  int samples     = 0;  ///< sequences processed (compute tasks), for batch-dependent efficiency
  double flops    = 0;  ///< compute tasks: FLOPs on this device
  double params   = 0;  ///< optimizer tasks: parameters updated on this device
  double bytes    = 0;  ///< send/recv: message size; collectives: buffer size per member (all-gather: output)
  int peer        = -1; ///< send/recv: the other device
  int match       = -1; ///< send/recv: the id of the matching recv/send task
  int collective  = -1; ///< collectives: index in Schedule::collectives
  /// Part of the backward pass: backward compute, its TP all-reduces, gradient send/recv, ZeRO-3 gathers for it.
  bool backward   = false;
  /// A gradient reduction of routed experts, over the replicas that hold the same experts (Plan::ep).
  bool experts    = false;
  std::vector<int> deps; ///< ids of tasks of the same device that must end first (other streams' tasks included)
};

struct Collective {
  TaskKind kind = TaskKind::all_reduce;
  std::vector<int> devices; ///< members, in ring order
  std::vector<int> tasks;   ///< one task per member, same order
  double bytes = 0;         ///< per member: its buffer (all-to-all: what it holds for all members, itself included)
  int algorithm = 0;        ///< a CollectiveAlgorithm value
  int calls     = 1;        ///< library calls that move the bytes (one per parameter tensor for DeepSpeed's ZeRO-3)
  /// Each call goes through torch.distributed's list API, a synchronize before each gather (DeepSpeed's ZeRO-3
  /// before 0.6: costmodel/list_collectives.hpp).
  bool list_api = false;
  /// Members of the real collective; 0 means devices.size(). A folded schedule (fold.hpp) replays some of them.
  int members   = 0;

  /// Members of the real collective: what its steps and chunk sizes are computed over.
  int member_count() const { return members > 0 ? members : static_cast<int>(devices.size()); }
};

struct Fold;

struct Schedule {
  int device_count = 0;
  // The plan's shape, for names and reports.
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;
  int cp = 1; ///< context-parallel degree: compute tasks run on 1/cp of their sequences' tokens
  bool sequence_parallel = false; ///< Plan::splits_sequence(): replicated operators run on 1/tp of the tokens
  /// Plan::recompute: a forward keeps only the inputs of the layers full recompute covers (models::recomputed),
  /// and their backward reruns it (executors holding training memory need it).
  bool recompute = false;
  int zero_stage  = 0; ///< how the data-parallel group shards model states (executors holding them need it)
  int layer_count = 0;
  int virtual_stages = 1;        ///< model chunks per stage
  std::vector<int> stage_starts; ///< first layer of each chunk (Plan::stage_starts)

  std::vector<Task> tasks;
  std::vector<Collective> collectives;
  /// queues[device][stream]: task ids in execution order (the pipeline stream is in issue order only).
  std::vector<std::array<std::vector<int>, kStreamCount>> queues;
  /// Set when only some devices were lowered (lower_for_replay): which device stands for which, and the link
  /// bandwidths the replay needs. Such a schedule is for the simulator only, never for an executor.
  std::shared_ptr<const Fold> fold;

  /// The device whose tasks stand for `device`: itself unless the schedule is folded.
  int representative(int device) const;

  /// A readable stable name, unique within the schedule (computed, not stored): "fwd s1 r0 t0 mb3" (stage 1,
  /// replica 0, tensor-parallel rank 0, micro-batch 3), "fwd s1c2 ..." for chunk 2 of stage 1 with virtual
  /// stages, "bwd-w ..." for a zero-bubble schedule's weight-gradient step, with " l12" or " l4-6" when the
  /// chunk's computation is split by layer and ".1" for the piece of a tensor-parallel layer; "send-act",
  /// "recv-grad", "ar-tp-fwd", "ar-grad s0 r1 t0 b2" (bucket 2), "ar-grad-experts" (routed experts' buckets),
  /// "rs-grad", "a2a-fwd"/"a2a-bwd" (expert parallelism), "ag-kv-fwd"/"ag-kv-bwd"/"rs-kv-bwd" (context
  /// parallelism's ring of keys and values), "rs-tp-fwd"/"ag-tp-fwd" (sequence parallelism), "ag-param" (after
  /// the optimizer), "ag-fwd"/"ag-bwd" (ZeRO-3), "opt".
  std::string task_name(int id) const;
};

} // namespace hetsim::strategies
