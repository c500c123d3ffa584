#include "strategies/lowering/estimate.hpp"

#include "costmodel/collective.hpp"
#include "costmodel/compute.hpp"
#include "costmodel/link_class.hpp"
#include "costmodel/pipeline.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/pass_order.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::strategies {
namespace {

using costmodel::CollectiveOp;

class Estimator {
public:
  Estimator(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute)
      : plan_(plan), cluster_(*problem.cluster), workload_(*problem.workload), compute_(compute), algorithm_(static_cast<costmodel::Algorithm>(plan.collective_algorithm)),
        end_slowdown_(data_parallel_slowdown(0, plan.pp)), sharding_(plan.shards_layers())
  {
    for (int s = 0; s < plan.pp; ++s)
      stage_slowdown_.push_back(data_parallel_slowdown(s, s + 1));
  }

  PlanEstimate run() const
  {
    PlanEstimate result;
    // Every replica runs its pipeline; a stage's data-parallel group synchronises once all of its replicas have
    // ended their last backward.
    std::vector<double> stage_finish(plan_.pp, 0);
    for (int r = 0; r < plan_.dp; ++r) {
      const std::vector<double> finish = pipeline_finish_seconds(r);
      for (int s = 0; s < plan_.pp; ++s)
        stage_finish[s] = std::max(stage_finish[s], finish[s]);
    }
    result.pipeline_s = *std::max_element(stage_finish.begin(), stage_finish.end());

    std::vector<double> synced(plan_.pp), optimizer(plan_.pp, 0);
    for (int s = 0; s < plan_.pp; ++s) {
      double sync = 0;
      for (int t = 0; t < plan_.tp; ++t) {
        sync = std::max(sync, data_parallel_sync_seconds(s, t));
        for (int r = 0; r < plan_.dp; ++r)
          optimizer[s] = std::max(optimizer[s], optimizer_seconds(s, r, t));
      }
      synced[s] = stage_finish[s] + sync;
    }
    // The tied embedding's all-reduce joins the first and last stages once both have synchronised.
    if (const double tied = tied_embedding_seconds(); tied > 0)
      synced.front() = synced.back() = std::max(synced.front(), synced.back()) + tied;

    double synced_end = 0;
    for (int s = 0; s < plan_.pp; ++s) {
      result.iteration_time_s = std::max(result.iteration_time_s, synced[s] + optimizer[s]);
      synced_end              = std::max(synced_end, synced[s]);
    }
    result.data_parallel_s = synced_end - result.pipeline_s;
    result.optimizer_s     = result.iteration_time_s - synced_end;
    return result;
  }

private:
  double stage_params(int s) const
  {
    double params = 0;
    for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l)
      params += workload_.layers[l].params;
    return params / plan_.tp;
  }

  int layer_count() const { return static_cast<int>(workload_.layers.size()); }
  double activation_scale() const { return dtype_bytes(plan_.dtype) / 2.0; }
  double gradient_bytes_per_param() const { return plan_.gradient_reduction_bytes(); }

  std::vector<int> dp_group(int s, int t) const
  {
    std::vector<int> devices;
    for (int r = 0; r < plan_.dp; ++r)
      devices.push_back(plan_.device(s, r, t));
    return devices;
  }

  /// One replica's pipeline: when each of its stages ends its last backward.
  std::vector<double> pipeline_finish_seconds(int r) const
  {
    std::vector<StageSteps> full, last;
    for (int s = 0; s < plan_.pp; ++s)
      full.push_back(stage_steps(s, r, plan_.micro_batch[r]));
    if (!plan_.last_micro_batch.empty()) // a smaller last micro-batch (pp is 1)
      for (int s = 0; s < plan_.pp; ++s)
        last.push_back(stage_steps(s, r, plan_.last_micro_batch[r]));

    costmodel::PipelineDurations durations;
    durations.step_seconds = [&](int s, const costmodel::PipelineStep& step) {
      const bool final        = step.micro_batch + 1 == plan_.grad_accum[r];
      const StageSteps& steps = final && !last.empty() ? last[s] : full[s];
      if (!step.backward)
        return steps.forward_s;
      return final ? steps.final_backward_s : steps.backward_s;
    };
    std::vector<std::vector<costmodel::PipelineStep>> orders;
    for (int s = 0; s < plan_.pp; ++s) {
      orders.push_back(pass_order(plan_.schedule, plan_.pp, s, plan_.grad_accum[r]));
      if (s + 1 < plan_.pp) {
        durations.forward_transfer_s.push_back(full[s].to_next_s);
        durations.backward_transfer_s.push_back(full[s].from_next_s);
      }
    }
    return costmodel::pipeline_finish_seconds(orders, durations);
  }

  struct StageSteps {
    double forward_s   = 0; ///< one micro-batch's forward, with all that holds the stage's compute back
    double backward_s  = 0; ///< its backward, likewise
    double final_backward_s = 0; ///< the last micro-batch's backward, whose ZeRO-2 reduction ends the iteration
    double to_next_s   = 0; ///< its activations to stage s+1, every replica crossing the boundary at once
    double from_next_s = 0; ///< its input gradient back from stage s+1, likewise
  };

  /// One micro-batch of `mb` samples on stage `s` of replica `r`: forward and backward on the slowest TP member
  /// with their TP all-reduces and the per-micro-batch ZeRO traffic, and the boundary transfers.
  StageSteps stage_steps(int s, int r, int mb) const
  {
    const int first = plan_.stage_starts[s];
    const int end   = plan_.stage_end(s, layer_count());
    StageSteps steps;
    std::vector<int> tp_group;
    for (int t = 0; t < plan_.tp; ++t) {
      const GpuSpec& gpu = cluster_.gpu_of(plan_.device(s, r, t));
      steps.forward_s =
          std::max(steps.forward_s, compute_.layers_seconds(gpu, workload_, first, end, plan_.tp, mb, plan_.dtype, false));
      steps.backward_s = std::max(steps.backward_s, compute_.layers_seconds(gpu, workload_, first, end, plan_.tp, mb,
                                                                            plan_.dtype, true, plan_.recompute));
      tp_group.push_back(plan_.device(s, r, t));
    }

    // Measured layer times hold their all-reduces already.
    if (plan_.tp > 1 && !compute_.profiled(cluster_, tp_group, plan_.tp)) {
      double bytes = 0;
      int forward = 0, all = 0;
      for (int l = first; l < end; ++l) {
        const auto& layer = workload_.layers[l];
        const int reductions = tensor_parallel_all_reduces(layer, plan_);
        forward += layer.tensor_parallel_all_reduces;
        all += reductions;
        bytes += reductions * layer.activation_bytes_per_sample * mb * activation_scale();
      }
      if (all > 0) {
        const double each = transfer_seconds(tp_group, CollectiveOp::all_reduce, bytes / all) +
                            call_seconds(tp_group, CollectiveOp::all_reduce);
        steps.forward_s += forward * each;
        steps.backward_s += (all - forward) * each;
      }
    }

    // ZeRO-2/3 synchronise every micro-batch on the data-parallel stream, beside the compute of the whole
    // micro-batch. ZeRO-3 gathers of layers larger than the prefetch distance wait for the compute before them and
    // hold the next computation back: they add to it instead of overlapping. ZeRO-2's last reduction is counted
    // with the synchronisation after the pipeline.
    steps.final_backward_s = steps.backward_s;
    if (plan_.zero_stage >= 2 || sharding_) {
      const SyncSeconds synced = per_micro_batch_sync_seconds(s);
      const double serial      = synced.unprefetched;
      const double overlapped  = synced.all - serial;
      steps.backward_s         = std::max(steps.backward_s, overlapped - steps.forward_s);
      steps.forward_s += serial / 2;
      steps.backward_s += serial / 2;
      if (plan_.zero_stage == 3 || sharding_)
        steps.final_backward_s = steps.backward_s;
    }

    if (s + 1 < plan_.pp) {
      // Every replica crosses this boundary at about the same time, sharing NICs and WAN links.
      // Each tensor-parallel rank sends its 1/tp share (as the lowering does).
      const double bytes = boundary_bytes(workload_.layers[end - 1], workload_.seq_len, plan_, mb);
      std::vector<std::pair<int, int>> forward, backward;
      for (int other = 0; other < plan_.dp; ++other)
        for (int t = 0; t < plan_.tp; ++t) {
          forward.emplace_back(plan_.device(s, other, t), plan_.device(s + 1, other, t));
          backward.emplace_back(plan_.device(s + 1, other, t), plan_.device(s, other, t));
        }
      steps.to_next_s   = costmodel::concurrent_transfers_seconds(cluster_, forward, bytes);
      steps.from_next_s = costmodel::concurrent_transfers_seconds(cluster_, backward, bytes);
    }
    return steps;
  }

  /// How much slower a data-parallel ring step is when the groups of stages [first, end) synchronise at once
  /// than when a group is alone: groups whose rings cross the same NIC or WAN link share it. Every stage
  /// synchronises at the end of the iteration; per-micro-batch synchronisation (ZeRO 2/3) is staggered by the
  /// pipeline, so only the tensor-parallel ranks of one stage meet there.
  double data_parallel_slowdown(int first, int end) const
  {
    if (plan_.dp == 1)
      return 1;
    std::vector<std::pair<int, int>> edges;
    for (int s = first; s < end; ++s)
      for (int t = 0; t < plan_.tp; ++t) {
        const auto group = dp_group(s, t);
        for (std::size_t i = 0; i < group.size(); ++i)
          edges.emplace_back(group[i], group[(i + 1) % group.size()]);
      }
    return sharing_slowdown(edges);
  }

  /// How much slower the slowest of `edges` is when they all carry a large transfer at once than alone.
  double sharing_slowdown(const std::vector<std::pair<int, int>>& edges) const
  {
    constexpr double kProbeBytes = 256.0 * 1024 * 1024; // large enough that latency does not matter
    double alone                 = 0;
    for (const auto& [from, to] : edges)
      alone = std::max(alone, costmodel::transfer_seconds(cluster_, from, to, kProbeBytes));
    if (alone <= 0)
      return 1;
    return std::max(1.0, costmodel::concurrent_transfers_seconds(cluster_, edges, kProbeBytes) / alone);
  }

  /// The network's part of one collective of `bytes` over `group` alone.
  double transfer_seconds(const std::vector<int>& group, CollectiveOp op, double bytes) const
  {
    return costmodel::collective_seconds(cluster_, group, op, algorithm_, bytes);
  }

  /// The software cost of a collective of `op` that takes `calls` library calls over `group`: the library's
  /// latency beyond moving the bytes once, and each call's calibrated overhead (γ; 0 without calibration).
  /// Links shared with other groups slow the transfers, not this.
  double call_seconds(const std::vector<int>& group, CollectiveOp op, int calls = 1) const
  {
    const costmodel::Calibration* calibration = compute_.calibration();
    const double calibrated =
        calibration ? calls * costmodel::collective_overhead_seconds(cluster_, *calibration, group) : 0;
    return calibrated + costmodel::library_latency_seconds(cluster_, group, op, calls);
  }

  /// Collective time of `bytes` split in buckets of the plan's size (the lowering's packing): `slowdown` times
  /// the transfers of a group alone, plus each bucket's call.
  double bucketed_seconds(const std::vector<int>& group, CollectiveOp op, double bytes, double slowdown) const
  {
    const double capacity = plan_.gradient_bucket_bytes();
    const double full     = std::floor(bytes / capacity);
    const double rest     = bytes - full * capacity;
    double seconds        = full * transfer_seconds(group, op, capacity);
    if (rest > 0)
      seconds += transfer_seconds(group, op, rest);
    const double calls = full + (rest > 0 ? 1 : 0);
    return slowdown * seconds + calls * call_seconds(group, op);
  }

  /// Per-micro-batch synchronisation of stage `s` on its slowest data-parallel group, and the part of it made of
  /// ZeRO-3 gathers that the framework cannot prefetch (zero3_prefetch_layers 0: they wait for the compute
  /// before them), on the group slowest at those.
  struct SyncSeconds {
    double all          = 0;
    double unprefetched = 0;
  };
  SyncSeconds per_micro_batch_sync_seconds(int s) const
  {
    if (plan_.dp == 1)
      return {};
    if (sharding_)
      return {sharded_sync_seconds(s), 0};
    const double bytes = stage_params(s) * gradient_bytes_per_param();
    SyncSeconds worst;
    for (int t = 0; t < plan_.tp; ++t) {
      const auto group = dp_group(s, t);
      if (plan_.zero_stage != 3) {
        worst.all =
            std::max(worst.all, bucketed_seconds(group, CollectiveOp::reduce_scatter, bytes, stage_slowdown_[s]));
        continue;
      }
      // ZeRO-3 goes layer by layer, as the lowering issues it: each layer's parameters gathered before its
      // forward and again before its backward, its gradients reduce-scattered after; every collective pays its
      // own latency and calls.
      SyncSeconds seconds;
      for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l) {
        const models::Layer& layer = workload_.layers[l];
        const double params        = layer.params / plan_.tp;
        if (params <= 0)
          continue;
        const int calls       = zero3_calls(layer, plan_);
        const double gathers  = 2 * (stage_slowdown_[s] * transfer_seconds(group, CollectiveOp::all_gather,
                                                                           params * dtype_bytes(plan_.dtype)) +
                                    call_seconds(group, CollectiveOp::all_gather, calls));
        seconds.all += gathers +
                       stage_slowdown_[s] *
                           transfer_seconds(group, CollectiveOp::reduce_scatter, params * gradient_bytes_per_param()) +
                       call_seconds(group, CollectiveOp::reduce_scatter, calls);
        if (zero3_prefetch_layers(layer, plan_) == 0)
          seconds.unprefetched += gathers;
      }
      worst.all          = std::max(worst.all, seconds.all);
      worst.unprefetched = std::max(worst.unprefetched, seconds.unprefetched);
    }
    return worst;
  }

  /// With layer_sharding: per sharded slice, gathers before forward and backward and a reduce-scatter after
  /// backward, each a collective of its own (as the lowering issues them).
  double sharded_sync_seconds(int s) const
  {
    double worst = 0;
    for (int t = 0; t < plan_.tp; ++t) {
      const auto group = dp_group(s, t);
      double seconds = 0, calls = 0;
      for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l) {
        const LayerSharding& choice = plan_.layer_sharding[l];
        if (choice.sharded == 0 || workload_.layers[l].params <= 0)
          continue;
        const double bytes = workload_.layers[l].params / plan_.tp / choice.slices * gradient_bytes_per_param();
        seconds += choice.sharded * (2 * transfer_seconds(group, CollectiveOp::all_gather, bytes) +
                                     transfer_seconds(group, CollectiveOp::reduce_scatter, bytes));
        calls += 3 * choice.sharded;
      }
      worst = std::max(worst, stage_slowdown_[s] * seconds +
                                  calls / 3 * (2 * call_seconds(group, CollectiveOp::all_gather) +
                                               call_seconds(group, CollectiveOp::reduce_scatter)));
    }
    return worst;
  }

  /// Parameters of layer `l` on one device whose gradients are reduced in buckets (all but sharded slices).
  double bucketed_layer_params(int l) const
  {
    const double params = workload_.layers[l].params / plan_.tp;
    return sharding_ ? params * (1 - plan_.layer_sharding[l].fraction()) : params;
  }

  /// Parameters of stage `s` kept whole on every replica.
  double replicated_params(int s) const
  {
    if (!sharding_)
      return stage_params(s);
    double params = 0;
    for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l)
      params += bucketed_layer_params(l);
    return params;
  }

  /// The first and last stages' all-reduce of a tied embedding's gradient, after everything else. Every replica
  /// and TP rank has its pair, and all pairs reduce at once over the links between the two stages.
  double tied_embedding_seconds() const
  {
    const double bytes = tied_embedding_gradient_bytes(workload_.layers, plan_);
    if (bytes <= 0)
      return 0;
    std::vector<std::pair<int, int>> edges;
    for (int r = 0; r < plan_.dp; ++r)
      for (int t = 0; t < plan_.tp; ++t) {
        edges.emplace_back(plan_.device(0, r, t), plan_.device(plan_.pp - 1, r, t));
        edges.emplace_back(plan_.device(plan_.pp - 1, r, t), plan_.device(0, r, t));
      }
    const double slowdown = sharing_slowdown(edges);
    double slowest        = 0;
    for (const auto& [first, last] : edges) {
      const std::vector<int> pair = {first, last};
      slowest = std::max(slowest, slowdown * transfer_seconds(pair, CollectiveOp::all_reduce, bytes) +
                                      call_seconds(pair, CollectiveOp::all_reduce));
    }
    return slowest;
  }

  /// Synchronisation after stage `s`'s last backward on TP rank `t`, less what the backward hides.
  double data_parallel_sync_seconds(int s, int t) const
  {
    if (plan_.dp == 1 || plan_.zero_stage == 3)
      return 0;
    const auto group     = dp_group(s, t);
    const double bytes   = replicated_params(s) * gradient_bytes_per_param();
    const double gather  = plan_.zero_stage >= 1
                               ? bucketed_seconds(group, CollectiveOp::all_gather, stage_params(s) * dtype_bytes(plan_.dtype),
                                                  end_slowdown_)
                               : 0;
    // ZeRO 0-2 reduce during the last backward: buckets overlap it, the last bucket never does.
    const CollectiveOp op   = plan_.zero_stage == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
    const double reduce     = bucketed_seconds(group, op, bytes, end_slowdown_);
    const double last       = bucketed_seconds(group, op, std::min(bytes, plan_.gradient_bucket_bytes()), end_slowdown_);
    return std::max(last, reduce - overlappable_backward_seconds(s, t)) + gather;
  }

  /// The part of the slowest replica's last backward that the bucketed reduction can overlap: what remains once
  /// the first bucket is full (backward runs from the last layer; layers without parameters fill nothing).
  double overlappable_backward_seconds(int s, int t) const
  {
    if (!plan_.framework.reduce_during_backward)
      return 0;
    const int first = plan_.stage_starts[s];
    int closing     = plan_.stage_end(s, layer_count()); // layers [first, closing) run after the first bucket closes
    double filled   = 0;
    while (closing > first && filled < plan_.gradient_bucket_bytes()) {
      --closing;
      filled += bucketed_layer_params(closing) * gradient_bytes_per_param();
    }
    if (filled < plan_.gradient_bucket_bytes())
      return 0;
    double slowest = 0;
    for (int r = 0; r < plan_.dp; ++r)
      slowest = std::max(slowest, compute_.layers_seconds(cluster_.gpu_of(plan_.device(s, r, t)), workload_, first,
                                                          closing, plan_.tp, plan_.micro_batch[r], plan_.dtype,
                                                          true, plan_.recompute));
    return slowest;
  }

  double optimizer_seconds(int s, int r, int t) const
  {
    double params = stage_params(s) / (plan_.zero_stage >= 1 ? plan_.dp : 1);
    if (sharding_)
      params = replicated_params(s) + (stage_params(s) - replicated_params(s)) / plan_.dp;
    return compute_.optimizer_seconds(cluster_.gpu_of(plan_.device(s, r, t)), params);
  }

  const Plan& plan_;
  const Cluster& cluster_;
  const models::Workload& workload_;
  const costmodel::ComputeModel& compute_;
  costmodel::Algorithm algorithm_;
  double end_slowdown_;                ///< every data-parallel group at once
  bool sharding_;                      ///< layer_sharding shards some layer
  std::vector<double> stage_slowdown_; ///< the groups of one stage at once
};

} // namespace

PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::Calibration* calibration)
{
  return estimate(plan, problem, costmodel::ComputeModel(calibration));
}

PlanEstimate estimate(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute)
{
  return Estimator(plan, problem, compute).run();
}

} // namespace hetsim::strategies
