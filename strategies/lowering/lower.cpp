#include "strategies/lowering/lower.hpp"

#include "core/error.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/parameter_gather.hpp"
#include "strategies/lowering/pass_order.hpp"
#include "strategies/plan/plan_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <string>

namespace hetsim::strategies {
namespace {

/// Beyond this a schedule takes gigabytes and its replay hours; task ids also stay well inside `int`.
constexpr std::size_t kMaxTasks = 20'000'000;

/// One compute task of a stage, before it is instantiated for a device and a micro-batch.
struct Piece {
  int first_layer                  = 0;
  int layer_count                  = 0;
  int piece                        = 0;     ///< part of a tensor-parallel layer...
  int pieces                       = 1;     ///< ...of this many per pass
  bool recomputed                  = false; ///< reruns the forward of a recomputing backward
  bool recomputes                  = false; ///< a backward that holds the rerun forward too
  bool ends_layer                  = true;  ///< the last piece of `first_layer` (ZeRO-3 reduce-scatter point)
  double flops_per_sample          = 0;     ///< on one device, after the tensor-parallel split
  bool tp_all_reduce               = false; ///< followed by a tensor-parallel all-reduce...
  double tp_bytes_per_sample       = 0;     ///< ...of this many 16-bit bytes per sample
  double all_to_all_bytes_per_sample = 0;   ///< then an expert-parallel all-to-all of this many (0: none)
  /// Ring attention: the keys and values that pass round the context-parallel group while this piece runs.
  double key_value_bytes_per_sample = 0;
  double share                     = 1;     ///< of its layer's pass (Task::share)
  int bucket_begin                 = 0;     ///< gradient buckets complete once this piece ends
  int bucket_end                   = 0;
  int expert_bucket_begin          = 0;     ///< the same for the routed experts' buckets
  int expert_bucket_end            = 0;
};

/// Where a layer's pass stops to communicate: after each of these parts comes its tensor-parallel all-reduce
/// and/or expert-parallel all-to-all, or it is an attention whose context-parallel ring runs alongside
/// (models::communication_groups; a layer list's layer: its all-reduces).
struct LayerPart {
  bool all_reduce          = false;
  double all_reduce_bytes  = 0; ///< per sample, 16-bit
  double all_to_all_bytes  = 0; ///< per sample, 16-bit
  double key_value_bytes   = 0; ///< per sample, 16-bit, whole sequence
  double share             = 1; ///< of the layer's FLOPs
  double input_share       = 1; ///< of its input-gradient FLOPs (the backward less the weight gradients)
};

/// What every device of one pipeline stage does for one of its model chunks (its only one without virtual
/// stages), independent of its replica and tensor-parallel rank.
struct StageLayout {
  int first = 0;
  int end   = 0;
  std::vector<Piece> forward;
  std::vector<Piece> backward;      ///< micro-batches without gradient synchronisation
  std::vector<Piece> backward_sync; ///< micro-batches that synchronise gradient buckets (ZeRO 0-2)
  /// Zero bubble: the weight-gradient step, whole, and split where buckets close for the one that synchronises.
  std::vector<Piece> weight;
  std::vector<Piece> weight_sync;
  std::vector<double> bucket_bytes; ///< gradient buckets in backward layer order
  std::vector<double> expert_bucket_bytes; ///< the routed experts' (expert parallelism), reduced over their holders
  int bucket_offset                = 0; ///< buckets of the stage's earlier chunks: tasks number them on
  int expert_bucket_offset         = 0;
  double params                    = 0; ///< parameters of the stage on one device (after the TP split)
  double optimizer_params          = 0; ///< the part of them this device updates
  int boundary_layer               = 0; ///< whose output the chunk sends to the next (boundary_bytes)
};

class Lowering {
public:
  /// `origin` names the plan in a refusal (its file, or "plan").
  /// `too_many_advice` ends the refusal of a plan with too many tasks (what else would make it fit).
  Lowering(const Plan& plan, const Problem& problem, std::string origin, const Fold* fold,
           std::string too_many_advice = {})
      : origin_(std::move(origin)), too_many_advice_(std::move(too_many_advice)), plan_(plan),
        layers_(problem.workload->layers), seq_len_(problem.workload->seq_len),
        scale_(dtype_bytes(plan.dtype) / 2.0),
        zero3_(plan.zero_stage == 3 && plan.dp > 1), sharding_(plan.shards_layers()),
        splits_backward_(plan.schedule == PipelineSchedule::zero_bubble),
        expert_replicas_(plan.dp / plan.ep),
        tied_bytes_(tied_embedding_gradient_bytes(layers_, plan))
  {
    max_accum_ = *std::max_element(plan.grad_accum.begin(), plan.grad_accum.end());
    if (fold) {
      replicas_ = fold->replicas;
      tp_ranks_ = fold->tp_ranks;
    } else {
      replicas_.resize(plan.dp);
      tp_ranks_.resize(plan.tp);
      std::iota(replicas_.begin(), replicas_.end(), 0);
      std::iota(tp_ranks_.begin(), tp_ranks_.end(), 0);
    }
    for (int k = 0; k < plan.chunk_count(); ++k) {
      stages_.push_back(layout_stage(k));
      if (k >= plan.pp) {
        stages_[k].bucket_offset = stages_[k - plan.pp].bucket_offset +
                                   static_cast<int>(stages_[k - plan.pp].bucket_bytes.size());
        stages_[k].expert_bucket_offset = stages_[k - plan.pp].expert_bucket_offset +
                                          static_cast<int>(stages_[k - plan.pp].expert_bucket_bytes.size());
      }
    }
  }

  Schedule run(int device_count)
  {
    schedule_.device_count = device_count;
    schedule_.tp           = plan_.tp;
    schedule_.pp           = plan_.pp;
    schedule_.dp           = plan_.dp;
    schedule_.ep           = plan_.ep;
    schedule_.cp           = plan_.cp;
    schedule_.sequence_parallel = plan_.splits_sequence();
    schedule_.recompute         = plan_.recompute;
    schedule_.zero_stage   = plan_.zero_stage;
    schedule_.layer_count  = static_cast<int>(layers_.size());
    schedule_.virtual_stages = plan_.virtual_stages;
    schedule_.stage_starts = plan_.stage_starts;
    schedule_.queues.resize(device_count);
    const Counts counts = estimated_counts();
    if (counts.tasks > kMaxTasks)
      throw TooManyTasks(origin_ + ": lowers to about " + std::to_string(counts.tasks) + " tasks per iteration, more than the " +
                       std::to_string(kMaxTasks) + " a replay can hold; " + fewer_tasks_advice(counts.tasks) +
                       too_many_advice_);
    schedule_.tasks.reserve(counts.tasks);
    schedule_.collectives.reserve(counts.collectives);
    pending_p2p_.assign(static_cast<std::size_t>(std::max(0, plan_.chunk_count() - 1)) * plan_.dp * plan_.tp *
                            max_accum_ * 2,
                        -1);
    tp_group_ops_.resize(static_cast<std::size_t>(plan_.pp) * plan_.dp);
    dp_group_ops_.resize(static_cast<std::size_t>(plan_.pp) * plan_.tp);
    tied_group_ops_.resize(static_cast<std::size_t>(plan_.dp) * plan_.tp);
    ep_group_ops_.resize(static_cast<std::size_t>(plan_.pp) * plan_.dp * plan_.tp); // by group's first replica
    cp_group_ops_.resize(static_cast<std::size_t>(plan_.pp) * plan_.dp * plan_.tp); // by group's first rank
    expert_dp_group_ops_.resize(static_cast<std::size_t>(plan_.pp) * plan_.tp * plan_.ep);
    for (int s = 0; s < plan_.pp; ++s)
      for (int r : replicas_)
        for (int t : tp_ranks_)
          lower_device(s, r, t);
    return std::move(schedule_);
  }

private:
  double layer_param_bytes(int layer) const { return layers_[layer].params / plan_.tp * dtype_bytes(plan_.dtype); }

  /// A layer's gradients as the framework reduces them (fp32 or the dtype).
  double layer_gradient_bytes(int layer) const
  {
    return layers_[layer].params / plan_.tp * plan_.gradient_reduction_bytes();
  }

  /// Parameters of a layer on one device: its share of the tensor-parallel split, and of the routed experts
  /// only those of its expert-parallel rank.
  double device_params(int layer) const
  {
    const models::Layer& l = layers_[layer];
    return (l.params - l.expert_params + l.expert_params / plan_.ep) / plan_.tp;
  }

  /// Gradients of the routed experts a device holds, reduced apart when ep > 1 (over expert_replicas_).
  double expert_gradient_bytes(int layer) const
  {
    if (plan_.ep == 1)
      return 0;
    return layers_[layer].expert_params / plan_.ep / plan_.tp * plan_.gradient_reduction_bytes();
  }

  /// The part of a layer's gradients reduced in buckets over all replicas: all of it unless layer_sharding
  /// shards slices of it, or expert parallelism reduces the experts' apart.
  double bucketed_param_bytes(int layer) const
  {
    if (plan_.ep > 1)
      return (layers_[layer].params - layers_[layer].expert_params) / plan_.tp * plan_.gradient_reduction_bytes();
    const double bytes = layer_gradient_bytes(layer);
    return sharding_ ? bytes * (1 - plan_.layer_sharding[layer].fraction()) : bytes;
  }

  /// The parts a layer's pass stops after to communicate, in forward order.
  std::vector<LayerPart> layer_parts(const models::Layer& layer) const
  {
    std::vector<LayerPart> parts;
    if (layer.operators.empty()) { // a layer list's layer: its all-reduces, evenly spaced
      const int reductions = plan_.tp > 1 ? layer.tensor_parallel_all_reduces : 0;
      const int n          = std::max(1, reductions);
      parts.assign(static_cast<std::size_t>(n),
                   LayerPart{reductions > 0, layer.activation_bytes_per_sample, 0, 0, 1.0 / n, 1.0 / n});
      return parts;
    }
    const auto groups      = models::communication_groups(layer.operators, plan_.tp, plan_.ep, plan_.cp);
    const double weights   = models::weight_gradient_flops_per_sample(layer);
    const double equal     = 1.0 / static_cast<double>(groups.size());
    const double forward   = layer.forward_flops_per_sample;
    for (const models::OperatorGroup& group : groups)
      parts.push_back(LayerPart{group.all_reduce,
                                group.all_reduce_bytes_per_sample > 0 ? group.all_reduce_bytes_per_sample
                                                                      : layer.activation_bytes_per_sample,
                                group.all_to_all_bytes_per_sample, group.key_value_bytes_per_sample,
                                group.share(forward, weights, false, equal), group.share(forward, weights, true, equal)});
    return parts;
  }

  /// ZeRO-3 collectives per layer and direction: one for the whole layer, or one per sharded slice.
  int sharded_collectives(int layer) const
  {
    if (layers_[layer].params <= 0)
      return 0;
    if (sharding_)
      return plan_.layer_sharding[layer].sharded;
    return zero3_ && zero3_partitioned_share(layers_[layer], plan_) > 0 ? 1 : 0;
  }

  /// Bytes of one of those collectives: parameters gathered, or gradients reduce-scattered (ZeRO-3: of the
  /// tensors it partitions).
  double sharded_collective_bytes(int layer, bool gradients = false) const
  {
    const double bytes = gradients ? layer_gradient_bytes(layer) : layer_param_bytes(layer);
    return sharding_ ? bytes / plan_.layer_sharding[layer].slices
                     : bytes * zero3_partitioned_share(layers_[layer], plan_);
  }

  /// Whether layers [first, first + count) have operators that selective recompute reruns.
  bool reruns_attention(int first, int count) const
  {
    for (int l = first; l < first + count; ++l)
      if (layers_[l].selective_recompute_flops_per_sample > 0)
        return true;
    return false;
  }

  /// A backward's FLOPs: under zero bubble its input-gradient half only.
  double backward_flops_per_sample(const models::Layer& layer) const
  {
    return layer.backward_flops_per_sample + (plan_.recompute ? layer.forward_flops_per_sample : 0) +
           (plan_.selective_recompute ? layer.selective_recompute_flops_per_sample : 0) -
           (splits_backward_ ? models::weight_gradient_flops_per_sample(layer) : 0);
  }

  /// Fills gradient buckets of the plan's size with `bytes_of(layer)` in backward layer order: `buckets` gets
  /// their sizes, `closing` the layer that completes each (when it is ready to reduce). A chunk the framework
  /// does not bucket (Plan::buckets_chunk) has one, ready when its backward ends.
  template <class BytesOf>
  void fill_buckets(const StageLayout& stage, int s, BytesOf bytes_of, std::vector<double>& buckets,
                    std::vector<int>& closing) const
  {
    double stage_bytes = 0;
    for (int l = stage.first; l < stage.end; ++l)
      stage_bytes += bytes_of(l);
    if (!plan_.buckets_chunk(s)) {
      if (stage_bytes > 0) {
        buckets.push_back(stage_bytes);
        closing.push_back(stage.first);
      }
      return;
    }
    const double capacity = plan_.gradient_bucket_bytes();
    if (stage_bytes / capacity > static_cast<double>(kMaxTasks)) // checked before the buckets take the memory
      throw InputError(origin_ + ": " + (plan_.virtual_stages > 1 ? "chunk " : "stage ") + std::to_string(s) +
                       "'s gradients fill about " + std::to_string(static_cast<long long>(stage_bytes / capacity)) +
                       " buckets, more than the " + std::to_string(kMaxTasks) +
                       " tasks a replay can hold; give a larger bucket_mib");
    double filled = 0;
    for (int l = stage.end - 1; l >= stage.first; --l) {
      double left = bytes_of(l);
      while (left > capacity * 1e-9) { // ignore rounding residues
        const double take = std::min(left, capacity - filled);
        filled += take;
        left -= take;
        if (filled >= capacity * (1 - 1e-9)) {
          buckets.push_back(filled);
          closing.push_back(l);
          filled = 0;
        }
      }
    }
    if (filled > capacity * 1e-9) {
      buckets.push_back(filled);
      closing.push_back(stage.first);
    }
    // A framework that reduces after the backward pass starts every bucket once its first layer is done.
    if (!plan_.framework.reduce_during_backward)
      std::fill(closing.begin(), closing.end(), stage.first);
  }

  /// Chunk `s` of the pipeline (stage `s` without virtual stages).
  StageLayout layout_stage(int s) const
  {
    StageLayout stage;
    stage.first                   = plan_.stage_starts[s];
    stage.end                     = plan_.stage_end(s, static_cast<int>(layers_.size()));
    stage.boundary_layer = stage.end - 1;
    double expert_params = 0; // of stage.params: the routed experts', sharded by ZeRO over their holders only
    for (int l = stage.first; l < stage.end; ++l) {
      stage.params += device_params(l);
      expert_params += layers_[l].expert_params / plan_.ep / plan_.tp;
    }
    stage.optimizer_params = stage.params / (plan_.shards_optimizer_states() ? plan_.dp : 1);
    if (plan_.ep > 1 && plan_.shards_optimizer_states())
      stage.optimizer_params = (stage.params - expert_params) / plan_.dp + expert_params / expert_replicas_;
    if (sharding_) {
      stage.optimizer_params = 0;
      for (int l = stage.first; l < stage.end; ++l) {
        const double fraction = plan_.layer_sharding[l].fraction();
        stage.optimizer_params += layers_[l].params / plan_.tp * (1 - fraction + fraction / plan_.dp);
      }
    }

    // Gradient buckets, filled in backward layer order; a bucket is ready when the layer that completes it is.
    std::vector<int> closing_layer;
    std::vector<int> expert_closing_layer;
    const bool buckets = plan_.dp > 1 && plan_.zero_stage <= 2;
    if (buckets)
      fill_buckets(stage, s, [&](int l) { return bucketed_param_bytes(l); }, stage.bucket_bytes, closing_layer);
    if (buckets && expert_replicas_ > 1)
      fill_buckets(stage, s, [&](int l) { return expert_gradient_bytes(l); }, stage.expert_bucket_bytes,
                   expert_closing_layer);
    // Buckets [begin, end) closed by `layer`; they are contiguous since layers close them in order.
    auto closed_by = [](const std::vector<int>& closing, int layer, int& begin, int& end) {
      auto lo = std::find(closing.begin(), closing.end(), layer);
      auto hi = std::find_if(lo, closing.end(), [&](int c) { return c != layer; });
      begin   = static_cast<int>(lo - closing.begin());
      end     = static_cast<int>(hi - closing.begin());
    };
    auto buckets_of = [&](int layer, Piece& piece) {
      closed_by(closing_layer, layer, piece.bucket_begin, piece.bucket_end);
      closed_by(expert_closing_layer, layer, piece.expert_bucket_begin, piece.expert_bucket_end);
    };

    // One task per pass over the chunk's layers, backward, split after each layer that closes a bucket (dense or
    // routed experts') so that those buckets reduce while the rest runs; `completes` attaches them.
    auto split_where_buckets_close = [&](auto flops_of, bool recomputes, bool completes) {
      std::vector<Piece> pieces;
      Piece range;
      range.recomputes = recomputes;
      int top          = stage.end - 1;
      for (int l = stage.end - 1; l >= stage.first; --l) {
        range.flops_per_sample += flops_of(l);
        const bool closes =
            std::find(closing_layer.begin(), closing_layer.end(), l) != closing_layer.end() ||
            std::find(expert_closing_layer.begin(), expert_closing_layer.end(), l) != expert_closing_layer.end();
        if (!closes && l != stage.first)
          continue;
        range.first_layer = l;
        range.layer_count = top - l + 1;
        if (completes)
          buckets_of(l, range);
        pieces.push_back(range);
        range            = Piece{};
        range.recomputes = recomputes;
        top              = l - 1;
      }
      return pieces;
    };

    if (splits_backward_) {
      // The weight-gradient step runs the chunk's layers at once; the one that synchronises completes the buckets.
      stage.weight_sync = split_where_buckets_close(
          [&](int l) { return models::weight_gradient_flops_per_sample(layers_[l]) / plan_.tp / plan_.cp; }, false,
          true);
      Piece whole;
      whole.first_layer = stage.first;
      whole.layer_count = stage.end - stage.first;
      for (const Piece& piece : stage.weight_sync)
        whole.flops_per_sample += piece.flops_per_sample;
      stage.weight.push_back(whole);
    }

    const bool per_layer = plan_.tp > 1 || zero3_ || sharding_ || plan_.ep > 1 || plan_.cp > 1;
    if (per_layer) {
      for (int backward = 0; backward < 2; ++backward) {
        auto& pieces = backward ? stage.backward : stage.forward;
        pieces.reserve(static_cast<std::size_t>(stage.end - stage.first) * 2);
        for (int i = 0; i < stage.end - stage.first; ++i) {
          const int l                       = backward ? stage.end - 1 - i : stage.first + i;
          const models::Layer& layer        = layers_[l];
          const std::vector<LayerPart> parts = layer_parts(layer);
          const int n                       = static_cast<int>(parts.size());
          const bool communicates = n > 1 || parts[0].all_reduce || parts[0].all_to_all_bytes > 0 ||
                                    parts[0].key_value_bytes > 0;
          // A recomputing backward runs the layer's forward again, communication included, before its own
          // pieces. The backward runs the parts in reverse, each followed by its mirror communication.
          const bool recomputes = backward && plan_.recompute && communicates;
          const int count       = n * (recomputes ? 2 : 1);
          for (int k = 0; k < count; ++k) {
            const bool forward_part = !backward || (recomputes && k < n);
            const double flops      = forward_part ? layer.forward_flops_per_sample
                                      : recomputes ? layer.backward_flops_per_sample
                                                   : backward_flops_per_sample(layer);
            const LayerPart& part   = parts[static_cast<std::size_t>(forward_part ? k % n : n - 1 - k % n)];
            Piece piece;
            piece.first_layer         = l;
            piece.layer_count         = 1;
            piece.piece               = k;
            piece.pieces              = n;
            piece.recomputed          = backward && forward_part;
            piece.recomputes          = backward && plan_.recompute && !recomputes;
            piece.ends_layer          = k == count - 1;
            // Zero bubble: an input-gradient piece's share of its half of the backward.
            piece.share = splits_backward_ && backward && !forward_part ? part.input_share : part.share;
            piece.flops_per_sample    = flops / plan_.tp / plan_.cp * part.share;
            piece.tp_all_reduce       = part.all_reduce;
            piece.tp_bytes_per_sample = part.all_reduce_bytes / plan_.cp;
            piece.all_to_all_bytes_per_sample = part.all_to_all_bytes / plan_.cp;
            piece.key_value_bytes_per_sample  = part.key_value_bytes;
            pieces.push_back(piece);
          }
        }
      }
      stage.backward_sync = stage.backward;
      for (auto& piece : stage.backward_sync)
        if (piece.ends_layer && !splits_backward_) // zero bubble: the weight-gradient step completes them
          buckets_of(piece.first_layer, piece);
      return stage;
    }

    // Without tensor parallelism or ZeRO-3 a stage computes in one task per micro-batch and direction...
    Piece whole;
    whole.first_layer = stage.first;
    whole.layer_count = stage.end - stage.first;
    for (int l = stage.first; l < stage.end; ++l)
      whole.flops_per_sample += layers_[l].forward_flops_per_sample / plan_.cp;
    stage.forward.push_back(whole);
    whole.flops_per_sample = 0;
    whole.recomputes       = plan_.recompute;
    for (int l = stage.first; l < stage.end; ++l)
      whole.flops_per_sample += backward_flops_per_sample(layers_[l]) / plan_.cp;
    stage.backward.push_back(whole);
    // ...except a synchronising backward, split where buckets become ready so that they overlap the rest (under
    // zero bubble the weight-gradient step completes them instead).
    stage.backward_sync = split_where_buckets_close(
        [&](int l) { return backward_flops_per_sample(layers_[l]) / plan_.cp; }, plan_.recompute, !splits_backward_);
    return stage;
  }

  struct Counts {
    std::size_t tasks       = 0;
    std::size_t collectives = 0;
  };

  /// Generous estimate of the task and collective counts, so the vectors grow once and absurd plans stop early.
  /// What makes the plan fit the task limit: tasks grow with the micro-batches per iteration, so fewer, larger
  /// ones by the factor the count is over (the same global batch); when even one micro-batch per replica is too
  /// many, the plan itself is too large for one replay.
  std::string fewer_tasks_advice(std::size_t tasks) const
  {
    const int factor = static_cast<int>((tasks + kMaxTasks - 1) / kMaxTasks);
    if (max_accum_ < factor)
      return "even one micro-batch per replica is too many tasks: simulate fewer devices or layers";
    const int micro_batch = *std::max_element(plan_.micro_batch.begin(), plan_.micro_batch.end());
    return "micro-batches " + std::to_string(factor) + "x larger fit (micro_batch " +
           std::to_string(micro_batch * factor) + ", grad_accum " + std::to_string(max_accum_ / factor) +
           " on the replica with the most)";
  }

  Counts estimated_counts() const
  {
    std::size_t tasks = 0;
    std::size_t collectives = 0;
    const std::size_t tp_factor =
        1 + (plan_.tp > 1 ? (plan_.splits_sequence() ? 2 : 1) : 0) + (plan_.ep > 1 ? 1 : 0) + (plan_.cp > 1 ? 2 : 0);
    for (int k = 0; k < plan_.chunk_count(); ++k) { // a stage's devices count each of their chunks
      const StageLayout& stage = stages_[k];
      const std::size_t layers = stage.end - stage.first;
      for (int r : replicas_) {
        const std::size_t m = plan_.grad_accum[r];
        std::size_t per_device = m * ((stage.forward.size() + stage.backward.size()) * tp_factor + 4) +
                                 stage.backward_sync.size() * tp_factor + m * stage.weight.size() +
                                 stage.weight_sync.size() + 1;
        std::size_t dp_tasks = (stage.bucket_bytes.size() + stage.expert_bucket_bytes.size()) *
                               (plan_.zero_stage == 2 ? m + 1 : 2);
        if (zero3_)
          dp_tasks += 3 * layers * m;
        if (sharding_)
          for (int l = stage.first; l < stage.end; ++l)
            dp_tasks += 3 * static_cast<std::size_t>(sharded_collectives(l)) * m;
        per_device += dp_tasks;
        tasks += per_device * tp_ranks_.size();
        if (r == 0) {
          collectives += dp_tasks * tp_ranks_.size();
          if (plan_.tp > 1 || plan_.ep > 1 || plan_.cp > 1)
            collectives += (tp_factor - 1) * m * (stage.forward.size() + stage.backward.size()) * replicas_.size();
        }
      }
    }
    return Counts{tasks, collectives};
  }

  int add_task(Task&& task)
  {
    task.id = static_cast<int>(schedule_.tasks.size());
    schedule_.queues[task.device][static_cast<int>(task.stream)].push_back(task.id);
    schedule_.tasks.push_back(std::move(task));
    return schedule_.tasks.back().id;
  }

  /// A task on device `device_` at the current position in the plan.
  Task make_task(TaskKind kind, Stream stream, int micro_batch, bool backward) const
  {
    Task task;
    task.kind        = kind;
    task.stream      = stream;
    task.device      = device_;
    task.stage       = stage_;
    task.replica     = replica_;
    task.tp_rank     = tp_rank_;
    task.micro_batch = micro_batch;
    task.chunk       = micro_batch >= 0 ? chunk_ : 0;
    task.backward    = backward;
    return task;
  }

  /// Adds a send or recv and pairs it with its counterpart through the boundary slot `key`.
  int add_p2p(Task&& task, std::size_t key)
  {
    const int id = add_task(std::move(task));
    int& other   = pending_p2p_[key];
    if (other < 0) {
      other = id;
    } else {
      schedule_.tasks[id].match    = other;
      schedule_.tasks[other].match = id;
    }
    return id;
  }

  std::size_t p2p_key(int boundary, int micro_batch, bool backward) const
  {
    return ((((static_cast<std::size_t>(boundary) * plan_.dp + replica_) * plan_.tp + tp_rank_) * max_accum_ +
             micro_batch) *
            2) +
           (backward ? 1 : 0);
  }

  /// Adds this device's task of the next collective of a group. Every member issues the group's collectives
  /// in the same order; the first member (lowest replica or TP rank) creates each one.
  /// `members`: of the real group, whether or not all of them are lowered.
  int add_collective_task(Task&& task, std::vector<int>& group_ops, int& issued, bool first_member, int members)
  {
    const int device = task.device;
    if (issued == static_cast<int>(group_ops.size())) {
      HETSIM_ASSERT(first_member);
      Collective collective;
      collective.kind      = task.kind;
      collective.bytes     = task.bytes;
      collective.algorithm = static_cast<int>(plan_.collective_algorithm);
      collective.members   = members;
      const std::size_t lowered = task.stream == Stream::tensor_parallel ? tp_ranks_.size()
                                  : task.stream == Stream::expert_parallel || task.stream == Stream::context_parallel
                                      ? static_cast<std::size_t>(members)
                                      : replicas_.size();
      collective.devices.reserve(lowered);
      collective.tasks.reserve(lowered);
      group_ops.push_back(static_cast<int>(schedule_.collectives.size()));
      schedule_.collectives.push_back(std::move(collective));
    }
    const int index        = group_ops[issued++];
    Collective& collective = schedule_.collectives[index];
    HETSIM_ASSERT(collective.kind == task.kind && collective.bytes == task.bytes);
    task.collective = index;
    const int id    = add_task(std::move(task));
    collective.devices.push_back(device);
    collective.tasks.push_back(id);
    return id;
  }

  int add_tp_collective(Task&& task)
  {
    return add_collective_task(std::move(task), tp_group_ops_[stage_ * plan_.dp + replica_], tp_issued_,
                               tp_rank_ == 0, plan_.tp);
  }

  int add_dp_collective(Task&& task)
  {
    return add_collective_task(std::move(task), dp_group_ops_[stage_ * plan_.tp + tp_rank_], dp_issued_,
                               replica_ == 0, plan_.dp);
  }

  /// The device's expert-parallel group: the ep consecutive replicas of its own, same stage and TP rank.
  int add_ep_collective(Task&& task)
  {
    const int first = replica_ - plan_.expert_rank(replica_);
    return add_collective_task(std::move(task), ep_group_ops_[(stage_ * plan_.dp + first) * plan_.tp + tp_rank_],
                               ep_issued_, first == replica_, plan_.ep);
  }

  /// The device's context-parallel group: the cp consecutive data-parallel ranks of its replica, same stage and
  /// TP rank.
  int add_cp_collective(Task&& task)
  {
    const int first = plan_.context_group_first(replica_);
    return add_collective_task(std::move(task), cp_group_ops_[(stage_ * plan_.dp + first) * plan_.tp + tp_rank_],
                               cp_issued_, first == replica_, plan_.cp);
  }

  /// A gradient collective over the device's data-parallel group, or, for routed experts' gradients, over the
  /// replicas holding the same experts as the device (one per expert-parallel group).
  int add_gradient_collective(Task&& task, bool experts)
  {
    if (!experts)
      return add_dp_collective(std::move(task));
    task.experts = true;
    return add_collective_task(std::move(task),
                               expert_dp_group_ops_[(stage_ * plan_.tp + tp_rank_) * plan_.ep +
                                                    plan_.expert_rank(replica_)],
                               expert_dp_issued_, plan_.expert_group(replica_) == 0, expert_replicas_);
  }

  /// ZeRO-3: gathers a layer's parameters (or its sharded slices, one by one) on the data-parallel stream
  /// (ordered only by that stream); returns the last gather.
  int add_gather(int layer, int micro_batch, bool backward, int after = -1)
  {
    // What the recompute's gather released before the backward comes again with the backward's (zero3 only).
    const Zero3Regather again =
        backward && zero3_ && !sharding_ ? zero3_backward_regather(layers_[layer], plan_) : Zero3Regather{};
    int last = -1;
    for (int slice = 0; slice < sharded_collectives(layer); ++slice) {
      Task task        = make_task(TaskKind::all_gather, Stream::data_parallel, micro_batch, backward);
      task.first_layer = layer;
      task.layer_count = 1;
      task.piece       = slice;
      task.bytes       = sharded_collective_bytes(layer) + layer_param_bytes(layer) * again.share;
      if (after >= 0)
        task.deps = {after};
      last             = add_dp_collective(std::move(task));
      Collective& collective = schedule_.collectives[schedule_.tasks[last].collective];
      set_library_calls(collective, layer);
      collective.calls += again.calls;
    }
    return last;
  }

  /// Layers ahead of the compute that a ZeRO-3 gather of `layer` may run (zero3_prefetch_layers).
  int prefetch_layers(int layer) const
  {
    return zero3_ && !sharding_ ? zero3_prefetch_layers(layers_[layer], plan_) : std::numeric_limits<int>::max();
  }

  /// The calls one of `layer`'s collectives takes (a sharded slice's: one), and how they are made.
  void set_library_calls(Collective& collective, int layer) const
  {
    const bool zero3  = zero3_ && !sharding_;
    collective.calls    = zero3 ? zero3_calls(layers_[layer], plan_) : 1;
    collective.list_api = zero3 && zero3_list_collectives(plan_.framework);
  }

  bool gathers(int layer) const { return sharded_collectives(layer) > 0; }

  void lower_device(int s, int r, int t)
  {
    stage_     = s;
    replica_   = r;
    tp_rank_   = t;
    device_    = plan_.device(s, r, t);
    tp_issued_   = 0;
    dp_issued_   = 0;
    tied_issued_ = 0;
    ep_issued_   = 0;
    cp_issued_   = 0;
    expert_dp_issued_ = 0;
    blocking_send_ = -1;
    sync_tasks_.clear();

    const int accum = plan_.grad_accum[r];
    const std::vector<costmodel::PipelineStep> order =
        pass_order(plan_.schedule, plan_.pp, s, accum, plan_.virtual_stages, plan_.microbatch_group);

    // ZeRO 0-1 reduce a chunk's buckets during its last backward (each chunk has its own buffers, as
    // Megatron-LM's), ZeRO-2 during every backward.
    const bool buckets = plan_.dp > 1 && plan_.zero_stage <= 2;
    // Under zero bubble the weight-gradient steps complete the gradients.
    std::vector<std::size_t> last_backward(plan_.virtual_stages, 0);
    for (std::size_t i = 0; i < order.size(); ++i)
      if (order[i].backward && order[i].weight == splits_backward_)
        last_backward[order[i].chunk] = i;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const costmodel::PipelineStep& step = order[i];
      const bool sync = step.backward && step.weight == splits_backward_ && buckets &&
                        (plan_.zero_stage == 2 || i == last_backward[step.chunk]);
      if (step.weight)
        lower_weight_step(step.micro_batch, step.chunk * plan_.pp + s, sync);
      else
        lower_step(step.micro_batch, step.chunk * plan_.pp + s, step.backward, sync);
    }

    if (tied_bytes_ > 0 && (s == 0 || s == plan_.pp - 1)) {
      // The first stage's embedding and the last stage's output projection share their weights: their
      // gradients are summed once the backward pass and the data-parallel reduction are done.
      Task tie  = make_task(TaskKind::all_reduce, Stream::data_parallel, -1, true);
      tie.bytes = tied_bytes_;
      tie.deps  = {schedule_.queues[device_][static_cast<int>(Stream::compute)].back()};
      sync_tasks_.push_back(add_collective_task(std::move(tie), tied_group_ops_[r * plan_.tp + t], tied_issued_,
                                                s == 0, 2));
    }

    // One step over every chunk of the device; its layers, when they are one range.
    Task step  = make_task(TaskKind::optimizer, Stream::compute, -1, false);
    step.first_layer = plan_.virtual_stages == 1 ? stages_[s].first : -1;
    step.layer_count = plan_.virtual_stages == 1 ? stages_[s].end - stages_[s].first : 0;
    for (int chunk : plan_.stage_chunks(s))
      step.params += stages_[chunk].optimizer_params;
    step.deps        = sync_tasks_;
    if (blocking_send_ >= 0)
      step.deps.push_back(blocking_send_);
    const int optimizer = add_task(std::move(step));

    if (plan_.dp > 1 && plan_.shards_optimizer_states() && plan_.zero_stage != 3) {
      // The updated parameters of each bucket, dense then routed experts' (each over its own group).
      for (bool experts : {false, true}) {
        int piece = 0; // buckets numbered over the device's chunks
        for (int chunk : plan_.stage_chunks(s)) {
          const double per_param =
              experts ? gathered_expert_bytes_per_param(plan_)
                      : gathered_bytes_per_param(layers_, {{stages_[chunk].first, stages_[chunk].end}}, plan_);
          for (double bytes : experts ? stages_[chunk].expert_bucket_bytes : stages_[chunk].bucket_bytes) {
            Task gather  = make_task(TaskKind::all_gather, Stream::data_parallel, -1, false);
            gather.piece = piece++;
            gather.bytes = bytes / plan_.gradient_reduction_bytes() * per_param;
            gather.deps  = {optimizer};
            add_gradient_collective(std::move(gather), experts);
          }
        }
      }
    }
  }

  /// The gradient buckets `piece` completes once compute task `id` ends: dense, then routed experts' (each over
  /// its own group).
  void add_buckets(const StageLayout& stage, const Piece& piece, int id, int m)
  {
    for (bool experts : {false, true}) {
      const int begin   = experts ? piece.expert_bucket_begin : piece.bucket_begin;
      const int end     = experts ? piece.expert_bucket_end : piece.bucket_end;
      const int first   = experts ? stage.expert_bucket_offset : stage.bucket_offset;
      const auto& sizes = experts ? stage.expert_bucket_bytes : stage.bucket_bytes;
      for (int b = begin; b < end; ++b) {
        Task bucket  = make_task(plan_.zero_stage == 0 ? TaskKind::all_reduce : TaskKind::reduce_scatter,
                                 Stream::data_parallel, plan_.zero_stage == 2 ? m : -1, true);
        bucket.piece = first + b;
        bucket.bytes = sizes[b];
        bucket.deps  = {id};
        sync_tasks_.push_back(add_gradient_collective(std::move(bucket), experts));
      }
    }
  }

  /// Zero bubble: the weight-gradient step of chunk `k` for micro-batch `m`, after the input-gradient step that
  /// ran earlier on the same compute stream; it crosses no boundary and completes the gradient buckets.
  void lower_weight_step(int m, int k, bool sync)
  {
    const StageLayout& stage = stages_[k];
    chunk_                   = k / plan_.pp;
    const int samples        = plan_.micro_batch_samples(replica_, m);
    for (const Piece& piece : sync ? stage.weight_sync : stage.weight) {
      Task compute        = make_task(TaskKind::backward, Stream::compute, m, true);
      compute.part        = BackwardPart::weight_gradients;
      if (blocking_send_ >= 0) // the step's send, when sends block compute
        compute.deps = {std::exchange(blocking_send_, -1)};
      compute.first_layer = piece.first_layer;
      compute.layer_count = piece.layer_count;
      compute.samples     = samples;
      compute.flops       = piece.flops_per_sample * samples;
      const int id        = add_task(std::move(compute));
      add_buckets(stage, piece, id, m);
    }
  }

  /// Forward or backward of chunk `k` (the device's stage without virtual stages) for one micro-batch, with its
  /// transfers and collectives. Chunk k receives from chunk k - 1 and sends to chunk k + 1, on the devices of
  /// their stages: from the last stage back to the first between the rounds of interleaved 1F1B.
  void lower_step(int m, int k, bool backward, bool sync)
  {
    const StageLayout& stage = stages_[k];
    chunk_                   = k / plan_.pp;
    const int samples        = plan_.micro_batch_samples(replica_, m);
    const auto& pieces       = backward ? (sync ? stage.backward_sync : stage.backward) : stage.forward;
    const auto peer          = [&](int chunk) { return plan_.device(plan_.chunk_stage(chunk), replica_, tp_rank_); };
    const bool last_chunk    = k + 1 == plan_.chunk_count();

    int ready = -1; // the task of another stream the next piece waits for
    if (!backward && k > 0) {
      Task recv  = make_task(TaskKind::recv, Stream::pipeline, m, false);
      recv.peer  = peer(k - 1);
      recv.bytes = boundary_bytes(layers_[stages_[k - 1].boundary_layer], seq_len_, plan_, samples, false);
      ready      = add_p2p(std::move(recv), p2p_key(k - 1, m, false));
    } else if (backward && !last_chunk) {
      Task recv  = make_task(TaskKind::recv, Stream::pipeline, m, true);
      recv.peer  = peer(k + 1);
      recv.bytes = boundary_bytes(layers_[stage.boundary_layer], seq_len_, plan_, samples, true);
      ready      = add_p2p(std::move(recv), p2p_key(k, m, true));
    }

    int held = blocking_send_; // the previous step's send, when sends block compute
    blocking_send_ = -1;
    int gathered       = -1; // ZeRO-3 gather of the current layer
    int gathered_layer = -1;
    int last           = -1;
    std::vector<int> finished; // the compute task that ends each layer of this pass, in the pass's order
    for (const Piece& piece : pieces) {
      const int layer = piece.first_layer;
      if (piece.piece == 0 && gathers(layer) && gathered_layer != layer) {
        // The gather waits until the compute is within its prefetch distance: the layer that many before it.
        const int ahead = prefetch_layers(layer);
        const int after = ahead < static_cast<int>(finished.size())
                              ? finished[finished.size() - 1 - static_cast<std::size_t>(ahead)]
                              : -1;
        gathered       = add_gather(layer, m, backward, after);
        gathered_layer = layer;
      }
      // Ring attention: the keys and values go round the group while the attention runs (and in backward
      // their gradients come back round it); the next piece waits for the ring.
      int ring = -1;
      if (piece.key_value_bytes_per_sample > 0) {
        const bool forward_pass = !backward || piece.recomputed;
        for (TaskKind kind : forward_pass ? std::vector{TaskKind::all_gather}
                                          : std::vector{TaskKind::all_gather, TaskKind::reduce_scatter}) {
          Task pass        = make_task(kind, Stream::context_parallel, m, backward);
          pass.first_layer = layer;
          pass.layer_count = 1;
          pass.piece       = piece.piece;
          pass.pieces      = piece.pieces;
          pass.bytes       = piece.key_value_bytes_per_sample * samples * scale_ / plan_.tp;
          if (last >= 0)
            pass.deps = {last};
          ring = add_cp_collective(std::move(pass));
        }
      }
      Task compute = make_task(backward ? TaskKind::backward : TaskKind::forward, Stream::compute, m, backward);
      compute.first_layer = layer;
      compute.layer_count = piece.layer_count;
      compute.piece       = piece.piece;
      compute.pieces      = piece.pieces;
      compute.share       = piece.share;
      compute.recomputed  = piece.recomputed;
      compute.recomputes  = piece.recomputes;
      compute.recomputes_attention =
          backward && !piece.recomputed && plan_.selective_recompute && reruns_attention(layer, piece.layer_count);
      if (backward && splits_backward_)
        compute.part = BackwardPart::input_gradients;
      compute.samples     = samples;
      compute.flops       = piece.flops_per_sample * samples;
      const bool after_gather = piece.piece == 0 && gathered_layer == layer;
      compute.deps.reserve((ready >= 0 ? 1 : 0) + (after_gather ? 1 : 0) + (held >= 0 ? 1 : 0));
      if (ready >= 0)
        compute.deps.push_back(ready);
      if (after_gather)
        compute.deps.push_back(gathered);
      if (held >= 0)
        compute.deps.push_back(held);
      held = -1;
      const int id = add_task(std::move(compute));
      ready        = ring; // the next piece waits for the ring
      last         = id;
      if (piece.ends_layer)
        finished.push_back(id);

      if (piece.tp_all_reduce) {
        // Sequence parallelism reduce-scatters the output over the sequence and all-gathers the next input.
        const bool split = plan_.splits_sequence();
        for (TaskKind kind : split ? std::vector{TaskKind::reduce_scatter, TaskKind::all_gather}
                                   : std::vector{TaskKind::all_reduce}) {
          Task reduce        = make_task(kind, Stream::tensor_parallel, m, backward);
          reduce.first_layer = layer;
          reduce.layer_count = 1;
          reduce.piece       = piece.piece;
          reduce.pieces      = piece.pieces;
          reduce.bytes       = piece.tp_bytes_per_sample * samples * scale_; // the whole buffer, in or out
          reduce.deps        = {last};
          ready              = add_tp_collective(std::move(reduce));
          last               = ready;
        }
      }
      if (piece.all_to_all_bytes_per_sample > 0) {
        Task exchange        = make_task(TaskKind::all_to_all, Stream::expert_parallel, m, backward);
        exchange.first_layer = layer;
        exchange.layer_count = 1;
        exchange.piece       = piece.piece;
        exchange.pieces      = piece.pieces;
        // With sequence parallelism each tensor-parallel rank holds, and sends, 1/tp of the tokens.
        exchange.bytes = piece.all_to_all_bytes_per_sample * samples * scale_ / (plan_.splits_sequence() ? plan_.tp : 1);
        exchange.deps        = {last};
        ready                = add_ep_collective(std::move(exchange));
        last                 = ready;
      }

      add_buckets(stage, piece, id, m);

      if (backward && (zero3_ || sharding_) && piece.ends_layer) {
        // Prefetch the next layer's parameters before reducing this one's gradients.
        if (layer - 1 >= stage.first && gathers(layer - 1)) {
          gathered       = add_gather(layer - 1, m, true, prefetch_layers(layer - 1) == 0 ? id : -1);
          gathered_layer = layer - 1;
        }
        for (int slice = 0; slice < sharded_collectives(layer); ++slice) {
          Task scatter        = make_task(TaskKind::reduce_scatter, Stream::data_parallel, m, true);
          scatter.first_layer = layer;
          scatter.layer_count = 1;
          scatter.piece       = slice;
          scatter.bytes       = sharded_collective_bytes(layer, true);
          scatter.deps        = {id};
          const int added     = add_dp_collective(std::move(scatter));
          set_library_calls(schedule_.collectives[schedule_.tasks[added].collective], layer);
          sync_tasks_.push_back(added);
        }
      }
    }

    if (!backward && !last_chunk) {
      Task send  = make_task(TaskKind::send, Stream::pipeline, m, false);
      send.peer  = peer(k + 1);
      send.bytes = boundary_bytes(layers_[stage.boundary_layer], seq_len_, plan_, samples, false);
      send.deps  = {last};
      const int id = add_p2p(std::move(send), p2p_key(k, m, false));
      if (plan_.framework.blocking_sends)
        blocking_send_ = id;
    } else if (backward && k > 0) {
      Task send  = make_task(TaskKind::send, Stream::pipeline, m, true);
      send.peer  = peer(k - 1);
      send.bytes = boundary_bytes(layers_[stages_[k - 1].boundary_layer], seq_len_, plan_, samples, true);
      send.deps  = {last};
      const int id = add_p2p(std::move(send), p2p_key(k - 1, m, true));
      if (plan_.framework.blocking_sends)
        blocking_send_ = id;
    }
  }

  std::string origin_;
  std::string too_many_advice_;
  const Plan& plan_;
  std::vector<int> replicas_;  ///< replicas lowered (a fold's, or all), ascending
  std::vector<int> tp_ranks_;  ///< tensor-parallel ranks lowered, ascending
  const std::vector<models::Layer>& layers_;
  const int seq_len_;
  const double scale_; ///< activation bytes relative to 16-bit
  const bool zero3_;   ///< ZeRO-3 with something to shard over
  const bool sharding_; ///< layer_sharding shards some layers' slices over more than one replica
  const bool splits_backward_; ///< zero bubble: backwards in an input-gradient and a weight-gradient step
  const int expert_replicas_; ///< replicas holding the same routed experts: dp / ep
  const double tied_bytes_; ///< the embedding gradient the first and last stages all-reduce, 0 when they do not
  int max_accum_ = 1;
  std::vector<StageLayout> stages_;
  Schedule schedule_;

  std::vector<int> pending_p2p_;               ///< first task of each send/recv pair, by boundary slot
  std::vector<std::vector<int>> tp_group_ops_; ///< [stage * dp + replica]: collectives of the TP group, in order
  std::vector<std::vector<int>> dp_group_ops_; ///< [stage * tp + tp_rank]: collectives of the DP group, in order
  std::vector<std::vector<int>> tied_group_ops_; ///< [replica * tp + tp_rank]: the first and last stages' tie
  /// [(stage * dp + first replica of the group) * tp + tp_rank]: the expert-parallel group's all-to-alls
  std::vector<std::vector<int>> ep_group_ops_;
  /// [(stage * dp + first rank of the group) * tp + tp_rank]: the context-parallel group's rings
  std::vector<std::vector<int>> cp_group_ops_;
  /// [(stage * tp + tp_rank) * ep + expert rank]: gradient reductions of the routed experts
  std::vector<std::vector<int>> expert_dp_group_ops_;

  // The device being lowered.
  int stage_   = 0;
  int replica_ = 0;
  int tp_rank_ = 0;
  int chunk_   = 0; ///< of the micro-batch step being lowered
  int device_  = 0;
  int tp_issued_ = 0;
  int dp_issued_ = 0;
  int tied_issued_ = 0;
  int ep_issued_   = 0;
  int cp_issued_   = 0;
  int expert_dp_issued_ = 0;
  std::vector<int> sync_tasks_;
  int blocking_send_ = -1; ///< with blocking_sends: the device's last send, which its next compute waits for
};

} // namespace

Schedule lower(const Plan& plan, const Problem& problem, const std::string& origin)
{
  HETSIM_ASSERT(problem.cluster != nullptr && problem.workload != nullptr);
  validate_plan(plan, *problem.cluster, *problem.workload, origin);
  return Lowering(plan, problem, origin, nullptr).run(problem.cluster->device_count());
}

namespace {

/// `plan` lowered for the devices `fold` replays, the schedule holding it; every device when it folds nothing.
Schedule lower_folded(const Plan& plan, const Problem& problem, std::shared_ptr<const Fold> fold,
                      const std::string& origin)
{
  const int device_count = problem.cluster->device_count();
  if (!fold || !fold->folds())
    return Lowering(plan, problem, origin, nullptr).run(device_count);
  Schedule schedule = Lowering(plan, problem, origin, fold.get()).run(device_count);
  schedule.fold     = std::move(fold);
  return schedule;
}

} // namespace

Schedule lower_for_replay(const Plan& plan, const Problem& problem, bool exact, const std::string& origin)
{
  HETSIM_ASSERT(problem.cluster != nullptr && problem.workload != nullptr);
  validate_plan(plan, *problem.cluster, *problem.workload, origin);
  auto fold = std::make_shared<const Fold>(find_fold(plan, problem));
  if (exact && fold->folds())
    return Lowering(plan, problem, origin, nullptr,
                    "; or leave out --exact: the replay folds identical devices (" + fold->summary() + ")")
        .run(problem.cluster->device_count());
  return lower_folded(plan, problem, exact ? nullptr : std::move(fold), origin);
}

Schedule lower_with_fold(const Plan& plan, const Problem& problem, std::shared_ptr<const Fold> fold)
{
  HETSIM_ASSERT(problem.cluster != nullptr && problem.workload != nullptr);
  validate_plan(plan, *problem.cluster, *problem.workload, "plan");
  return lower_folded(plan, problem, std::move(fold), "plan");
}

int zero3_prefetch_layers(const models::Layer& layer, const Plan& plan)
{
  const double prefetch = plan.framework.prefetch_params;
  if (prefetch <= 0 || layer.params <= 0)
    return 1;
  // More layers than any model has are as good as all of them; a huge prefetch must not overflow the int.
  constexpr double kAll = 1 << 30;
  return static_cast<int>(std::min(kAll, std::floor(prefetch / (layer.params / plan.tp))));
}

int zero3_calls(const models::Layer& layer, const Plan& plan)
{
  if (!plan.framework.gather_per_tensor)
    return 1;
  return std::max(1, models::parameter_tensors_at_least(layer, plan.framework.persistence_threshold, plan.tp));
}

Zero3Regather zero3_backward_regather(const models::Layer& layer, const Plan& plan)
{
  const std::optional<double>& limit = plan.framework.max_reuse_distance;
  if (!plan.recompute || !limit || layer.params <= 0)
    return {};
  // DeepSpeed sums the elements of the modules used between two uses of a tensor, per tensor-parallel rank
  // (partitioned_param_coordinator.py, __params_to_release; stage3.py:236-284 at v0.3.15): a module's recompute
  // is followed by the recompute of the modules after it, then by their backward, then by its own backward.
  const double threshold = plan.framework.persistence_threshold;
  Zero3Regather regather;
  double regathered = 0, after = 0;
  for (auto op = layer.operators.rbegin(); op != layer.operators.rend(); ++op) {
    if (2 * after >= *limit)
      for (double elements : models::parameter_tensor_sizes_at_least(*op, threshold, plan.tp)) {
        ++regather.calls;
        regathered += elements;
      }
    after += op->params / op->tensor_parallel_divisor(plan.tp);
  }
  if (!plan.framework.gather_per_tensor)
    regather.calls = regather.calls > 0 ? 1 : 0;
  regather.share = regathered / layer.params;
  return regather;
}

double zero3_partitioned_share(const models::Layer& layer, const Plan& plan)
{
  if (layer.params <= 0)
    return 0;
  return models::parameter_elements_at_least(layer, plan.framework.persistence_threshold, plan.tp) / layer.params;
}

double tied_embedding_gradient_bytes(const std::vector<models::Layer>& layers, const Plan& plan)
{
  if (layers.empty() || plan.pp == 1 || !plan.framework.tied_embedding_all_reduce)
    return 0;
  const auto& head = layers.back().operators;
  const auto logits = std::find_if(head.begin(), head.end(), [](const auto& op) { return op.name == "logits"; });
  if (logits == head.end() || logits->params > 0) // an output projection of its own
    return 0;
  for (const auto& op : layers.front().operators)
    if (op.name == "embedding_lookup")
      return op.params / plan.tp * plan.gradient_reduction_bytes();
  return 0;
}

double boundary_bytes(const models::Layer& layer, int seq_len, const Plan& plan, int samples, bool gradient)
{
  // A context-parallel rank sends its part of the sequence.
  const double activation = layer.activation_bytes_per_sample * samples * dtype_bytes(plan.dtype) / 2.0 / plan.cp;
  const FrameworkSettings& framework = plan.framework;
  if (framework.scatter_gather_sends || plan.splits_sequence())
    return activation / plan.tp;
  // DeepSpeed v0.17.4, deepspeed/runtime/pipe/engine.py: with tp > 1 the first tensor of the tuple goes out in
  // 1/tp parts (l.755-760, l.1074-1076); a mask is cast .half() (l.1029-1032) and popped from gradient sends
  // (l.1083-1086).
  const double own  = framework.partitioned_sends ? activation / plan.tp : activation;
  const double mask = gradient || !framework.sends_attention_mask ? 0 : 2.0 * seq_len * seq_len / plan.cp;
  return own + mask;
}

int tensor_parallel_all_reduces(const models::Layer& layer, const Plan& plan)
{
  if (plan.tp <= 1)
    return 0;
  return layer.tensor_parallel_all_reduces * (plan.recompute ? 3 : 2);
}

} // namespace hetsim::strategies
