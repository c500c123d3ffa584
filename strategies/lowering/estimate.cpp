#include "strategies/lowering/estimate.hpp"

#include "costmodel/collective.hpp"
#include "costmodel/compute.hpp"
#include "costmodel/link_class.hpp"
#include "costmodel/list_collectives.hpp"
#include "costmodel/nccl_occupancy.hpp"
#include "costmodel/pipeline.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/fp32_accumulation.hpp"
#include "strategies/lowering/parameter_gather.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/pass_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace hetsim::strategies {
namespace {

using costmodel::CollectiveOp;

constexpr double kProbeBytes = 256.0 * 1024 * 1024; ///< a transfer large enough that latency does not matter
constexpr double kMaxLoad    = 0.9; ///< others' share of a link beyond which a transfer's time stops growing (the
                                    ///< occupancy queue paces the pipeline by then)

class Estimator {
public:
  Estimator(const Plan& plan, const Problem& problem, const costmodel::ComputeModel& compute)
      : plan_(plan), cluster_(*problem.cluster), workload_(*problem.workload), compute_(compute),
        algorithm_(static_cast<costmodel::Algorithm>(plan.collective_algorithm)), sharding_(plan.shards_layers()),
        alike_(alike_replicas(plan, cluster_))
  {
    end_slowdown_ = data_parallel_slowdowns(0, plan.pp, true);
    expert_end_slowdown_ = expert_data_parallel_slowdowns();
    for (int s = 0; s < plan.pp; ++s) {
      const std::vector<double> stage = data_parallel_slowdowns(s, s + 1, false);
      stage_slowdown_.insert(stage_slowdown_.end(), stage.begin(), stage.end());
      for (int t = 0; t < plan.tp; ++t) {
        const auto shares = costmodel::collective_multiprocessor_shares(cluster_, dp_group(s, t), plan.nccl);
        group_share_.push_back(shares.empty() ? 0 : *std::max_element(shares.begin(), shares.end()));
      }
    }
    time_boundaries();
  }

  PlanEstimate run() const
  {
    PlanEstimate result;
    // Every replica runs its pipeline; a stage's data-parallel group synchronises once all of its replicas have
    // ended their last backward. Replicas whose steps and transfers come out equal finish alike, so each set of
    // inputs is timed once (a search at 16,384 GPUs has thousands of replicas of a few kinds); an alike replica
    // (alike_replicas) takes its steps from the first of its kind.
    std::vector<double> stage_finish(plan_.pp, 0);
    std::map<int, ReplicaSteps> steps_of; // the first replica of each kind -> its steps
    std::set<std::vector<double>> timed;
    for (int r = 0; r < plan_.dp; ++r) {
      const auto [known, added] = steps_of.try_emplace(alike_[r]);
      if (added)
        known->second = replica_steps(r);
      if (!timed.insert(pipeline_inputs(r, known->second)).second)
        continue;
      const std::vector<double> finish = pipeline_finish_seconds(r, known->second);
      for (int s = 0; s < plan_.pp; ++s)
        stage_finish[s] = std::max(stage_finish[s], finish[s]);
    }
    result.pipeline_s = *std::max_element(stage_finish.begin(), stage_finish.end());

    std::vector<double> synced(plan_.pp), optimizer(plan_.pp, 0);
    for (int s = 0; s < plan_.pp; ++s) {
      double sync = 0;
      for (int t = 0; t < plan_.tp; ++t)
        sync = std::max(sync, data_parallel_sync_seconds(s, t));
      optimizer[s] = optimizer_seconds(s);
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
  /// Parameters of stage `s` on one device: its tensor-parallel share, its own routed experts only.
  double stage_params(int s) const
  {
    double params = 0;
    for (const auto& [first, end] : plan_.stage_ranges(s, layer_count()))
      for (int l = first; l < end; ++l)
        params += workload_.layers[l].params - workload_.layers[l].expert_params * (1 - 1.0 / plan_.ep);
    return params / plan_.tp;
  }

  /// The mean size of a layer's tensor-parallel all-reduces: its output, or a sparse block's routed tokens.
  double all_reduce_bytes_per_sample(const models::Layer& layer) const
  {
    double bytes = 0;
    int count    = 0;
    for (const models::OperatorGroup& group : models::communication_groups(layer.operators, plan_.tp, 1))
      if (group.all_reduce) {
        bytes += group.all_reduce_bytes_per_sample > 0 ? group.all_reduce_bytes_per_sample
                                                       : layer.activation_bytes_per_sample;
        ++count;
      }
    return count > 0 ? bytes / count : layer.activation_bytes_per_sample;
  }

  /// Of stage_params, the routed experts' when expert parallelism reduces them apart (0 without).
  double stage_expert_params(int s) const
  {
    if (plan_.ep == 1)
      return 0;
    double params = 0;
    for (const auto& [first, end] : plan_.stage_ranges(s, layer_count()))
      for (int l = first; l < end; ++l)
        params += workload_.layers[l].expert_params;
    return params / plan_.ep / plan_.tp;
  }

  /// The replicas of stage `s`, TP rank `t`, that hold the same experts as replica `r`.
  std::vector<int> expert_dp_group(int s, int t, int r) const
  {
    std::vector<int> devices;
    for (int q = plan_.expert_rank(r); q < plan_.dp; q += plan_.ep)
      devices.push_back(plan_.device(s, q, t));
    return devices;
  }

  /// One micro-batch's expert-parallel all-to-alls through layers [first, end) of replica `r`, forward and
  /// backward: the replicas run in step, so every group of the stage (every TP rank's, every replica's)
  /// exchanges at once, sharing the NICs.
  std::pair<double, double> all_to_all_seconds(int s, int r, int first, int end, int mb) const
  {
    if (plan_.ep == 1)
      return {0, 0};
    const int group_first = r - plan_.expert_rank(r);
    double forward        = 0;
    for (int l = first; l < end; ++l)
      for (const models::OperatorGroup& group :
           models::communication_groups(workload_.layers[l].operators, plan_.tp, plan_.ep)) {
        if (group.all_to_all_bytes_per_sample <= 0)
          continue;
        const double bytes = group.all_to_all_bytes_per_sample * mb * activation_scale() /
                             (plan_.splits_sequence() ? plan_.tp : 1);
        std::vector<costmodel::Flow> flows;
        std::size_t own_first = 0; // replica r's group's flows: [own_first, own_first + tp x ep x (ep - 1))
        for (int g = 0; g < plan_.dp; g += plan_.ep) {
          if (g == group_first)
            own_first = flows.size();
          for (int t = 0; t < plan_.tp; ++t)
            for (int i = 0; i < plan_.ep; ++i)
              for (int j = 0; j < plan_.ep; ++j)
                if (i != j)
                  flows.push_back({plan_.device(s, g + i, t), plan_.device(s, g + j, t), bytes / plan_.ep});
        }
        const std::vector<double> shared = costmodel::shared_flow_seconds(cluster_, flows);
        const auto own = shared.begin() + static_cast<std::ptrdiff_t>(own_first);
        const std::vector<double> seconds(own, own + static_cast<std::ptrdiff_t>(plan_.tp * plan_.ep * (plan_.ep - 1)));
        std::vector<int> members;
        for (int i = 0; i < plan_.ep; ++i)
          members.push_back(plan_.device(s, group_first + i, 0));
        forward += std::max(*std::max_element(seconds.begin(), seconds.end()),
                            costmodel::all_to_all_seconds(cluster_, members, bytes)) +
                   call_seconds(members, CollectiveOp::all_to_all);
      }
    // The backward mirrors every exchange, and a recomputing backward reruns the forward's too.
    return {forward, forward * (plan_.recompute ? 2 : 1)};
  }

  /// Ring attention through layers [first, end) of data-parallel rank `r` for one micro-batch of `mb`, forward
  /// and backward: the part of each attention's key-value ring (an all-gather forward; an all-gather and the
  /// gradients' reduce-scatter backward, as the lowering issues them) that its attention kernel, running
  /// alongside, does not hide. Every context-parallel group of the stage rings at once, sharing the links.
  std::pair<double, double> context_ring_seconds(int s, int r, int first, int end, int mb) const
  {
    if (plan_.cp == 1)
      return {0, 0};
    const int group_first = plan_.context_group_first(r);
    // The ring is its group's: replicas of one group on one GPU type at one batch wait for it alike.
    const auto key = std::tuple{s, group_first, first, end, mb, cluster_.device(plan_.device(s, r, 0)).gpu};
    if (const auto known = context_ring_s_.find(key); known != context_ring_s_.end())
      return known->second;
    return context_ring_s_[key] = context_ring_exposed_seconds(s, r, group_first, first, end, mb);
  }

  /// context_ring_seconds, worked out.
  std::pair<double, double> context_ring_exposed_seconds(int s, int r, int group_first, int first, int end,
                                                         int mb) const
  {
    std::vector<int> members;
    for (int c = 0; c < plan_.cp; ++c)
      members.push_back(plan_.device(s, group_first + c, 0));
    // How much the stage's other rings (every group's, every TP rank's) slow this one's, for rings of `bytes`:
    // worked out for every ring of the stage at once, once per stage and size (each replica asks).
    auto slowdown_of = [&](double bytes) {
      auto [known, added] = context_ring_slowdowns_.try_emplace({s, bytes});
      if (added) {
        std::vector<std::vector<costmodel::Flow>> rings; // TP rank 0's groups first, in order
        for (int t = 0; t < plan_.tp; ++t)
          for (int g = 0; g < plan_.dp; g += plan_.cp) {
            std::vector<int> group;
            for (int c = 0; c < plan_.cp; ++c)
              group.push_back(plan_.device(s, g + c, t));
            rings.push_back(ring_edges(group, bytes * (plan_.cp - 1) / plan_.cp));
          }
        known->second = sharing_slowdowns(rings);
      }
      return known->second[group_first / plan_.cp];
    };
    double slowdown_bytes = -1, slowdown = 1; // the layers' rings are mostly of one size
    const GpuSpec& gpu    = cluster_.gpu_of(plan_.device(s, r, 0));
    const double samples  = static_cast<double>(mb) / plan_.cp;
    const bool split      = plan_.splits_sequence();
    double forward = 0, backward = 0;
    for (int l = first; l < end; ++l) {
      const models::Layer& layer = workload_.layers[l];
      for (const models::OperatorGroup& group : models::communication_groups(layer.operators, plan_.tp, 1, plan_.cp)) {
        if (group.key_value_bytes_per_sample <= 0 || layer.forward_flops_per_sample <= 0)
          continue;
        const double share = group.share(layer.forward_flops_per_sample, 0, false, 0);
        const double bytes = group.key_value_bytes_per_sample * mb * activation_scale() / plan_.tp;
        if (bytes != slowdown_bytes)
          slowdown = slowdown_of(slowdown_bytes = bytes);
        const double ring  = transfer_seconds(members, CollectiveOp::all_gather, bytes, slowdown) +
                            call_seconds(members, CollectiveOp::all_gather);
        const double forward_core =
            share * compute_.layers_seconds(gpu, workload_, l, l + 1, plan_.tp, samples, plan_.dtype, false, false, split);
        // Zero bubble: the ring runs beside the attention's share of the input-gradient step.
        const double weights = plan_.schedule == PipelineSchedule::zero_bubble
                                   ? compute_.weight_gradient_seconds(gpu, workload_, l, l + 1, plan_.tp, samples,
                                                                      plan_.dtype, split)
                                   : 0;
        const double backward_share =
            weights > 0 ? group.share(layer.forward_flops_per_sample, models::weight_gradient_flops_per_sample(layer),
                                      true, 0)
                        : share;
        const double backward_core =
            backward_share * (compute_.layers_seconds(gpu, workload_, l, l + 1, plan_.tp, samples, plan_.dtype, true,
                                                      false, split) -
                              weights);
        forward += std::max(0.0, ring - forward_core);
        backward += std::max(0.0, 2 * ring - backward_core) + (plan_.recompute ? std::max(0.0, ring - forward_core) : 0);
      }
    }
    return {forward, backward};
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

  /// The largest share of a GPU that stage `s`'s data-parallel collectives hold on any of their members while
  /// they run (group_share_): what the compute beside them loses.
  double dp_compute_share(int s) const
  {
    const auto first = group_share_.begin() + static_cast<std::ptrdiff_t>(s) * plan_.tp;
    return *std::max_element(first, first + plan_.tp);
  }

  struct StageSteps {
    double forward_s   = 0; ///< one micro-batch's forward, with all that holds the stage's compute back
    double backward_s  = 0; ///< its backward, likewise
    double final_backward_s = 0; ///< the last micro-batch's backward, whose ZeRO-2 reduction ends the iteration
    double weight_s    = 0; ///< zero bubble: the weight-gradient step, which backward_s then leaves out
  };

  /// Replica `r`'s steps, chunk by chunk: a full micro-batch's, and the smaller last one's (pp 1) if any.
  struct ReplicaSteps {
    std::vector<StageSteps> full, last;
  };
  ReplicaSteps replica_steps(int r) const
  {
    ReplicaSteps steps;
    for (int k = 0; k < plan_.chunk_count(); ++k)
      steps.full.push_back(stage_steps(k, r, plan_.micro_batch[r]));
    if (!plan_.last_micro_batch.empty())
      for (int k = 0; k < plan_.chunk_count(); ++k)
        steps.last.push_back(stage_steps(k, r, plan_.last_micro_batch[r]));
    return steps;
  }

  /// All pipeline_finish_seconds(r, steps) depends on: the micro-batches, the steps and the boundary transfers.
  std::vector<double> pipeline_inputs(int r, const ReplicaSteps& steps) const
  {
    std::vector<double> inputs{static_cast<double>(plan_.grad_accum[r])};
    for (const auto* chunks : {&steps.full, &steps.last})
      for (const StageSteps& step : *chunks)
        inputs.insert(inputs.end(), {step.forward_s, step.backward_s, step.final_backward_s, step.weight_s});
    for (int k = 0; k + 1 < plan_.chunk_count(); ++k)
      for (const Transfer& transfer : {boundary_[k * plan_.dp + r].to_next, boundary_[k * plan_.dp + r].from_next})
        inputs.insert(inputs.end(), {transfer.seconds, transfer.latency_s, transfer.occupancy_s});
    return inputs;
  }

  /// One replica's pipeline: when each of its stages ends its last backward.
  std::vector<double> pipeline_finish_seconds(int r, const ReplicaSteps& chunk_steps) const
  {
    const int chunks = plan_.chunk_count();
    const std::vector<StageSteps>& full = chunk_steps.full;
    const std::vector<StageSteps>& last = chunk_steps.last;

    costmodel::PipelineDurations durations;
    durations.sends_block  = plan_.framework.blocking_sends;
    durations.step_seconds = [&](int s, const costmodel::PipelineStep& step) {
      const int k             = step.chunk * plan_.pp + s;
      const bool final        = step.micro_batch + 1 == plan_.grad_accum[r];
      const StageSteps& steps = final && !last.empty() ? last[k] : full[k];
      if (!step.backward)
        return steps.forward_s;
      if (step.weight)
        return steps.weight_s;
      return final ? steps.final_backward_s : steps.backward_s;
    };
    std::vector<std::vector<costmodel::PipelineStep>> orders;
    for (int s = 0; s < plan_.pp; ++s)
      orders.push_back(pass_order(plan_.schedule, plan_.pp, s, plan_.grad_accum[r], plan_.virtual_stages,
                                    plan_.microbatch_group));
    for (int k = 0; k + 1 < chunks; ++k) {
      const Boundary& boundary = boundary_[k * plan_.dp + r];
      durations.forward_transfer_s.push_back(boundary.to_next.seconds);
      durations.backward_transfer_s.push_back(boundary.from_next.seconds);
      durations.forward_occupancy_s.push_back(boundary.to_next.occupancy_s);
      durations.backward_occupancy_s.push_back(boundary.from_next.occupancy_s);
    }
    std::vector<double> finish = costmodel::pipeline_finish_seconds(orders, durations);
    // A transfer shares its links with the other boundaries' transfers for the part of each micro-batch's period
    // that those keep them busy, so its bytes go 1 / (1 - ρ) slower (processor sharing). The period comes from
    // the pipeline timed without that, refined once.
    for (int pass = 0; pass < 2 && plan_.pp > 1; ++pass) {
      const double period = *std::max_element(finish.begin(), finish.end()) / plan_.grad_accum[r];
      for (int k = 0; k + 1 < chunks; ++k) {
        const Boundary& boundary           = boundary_[k * plan_.dp + r];
        durations.forward_transfer_s[k]  = boundary.to_next.contended_s(period);
        durations.backward_transfer_s[k] = boundary.from_next.contended_s(period);
      }
      finish = costmodel::pipeline_finish_seconds(orders, durations);
    }
    return finish;
  }


  /// One micro-batch of `mb` samples through chunk `k` (stage k without virtual stages) of replica `r`:
  /// forward and backward on the slowest TP member with their TP all-reduces and the per-micro-batch ZeRO traffic.
  StageSteps stage_steps(int k, int r, int mb) const
  {
    const int s     = plan_.chunk_stage(k);
    const int first = plan_.stage_starts[k];
    const int end   = plan_.stage_end(k, layer_count());
    StageSteps steps;
    std::vector<int> tp_group;
    const bool split      = plan_.splits_sequence();
    const double samples  = static_cast<double>(mb) / plan_.cp; // a context-parallel rank's share of the tokens
    for (int t = 0; t < plan_.tp; ++t) {
      const GpuSpec& gpu = cluster_.gpu_of(plan_.device(s, r, t));
      steps.forward_s  = std::max(steps.forward_s, compute_.layers_seconds(gpu, workload_, first, end, plan_.tp,
                                                                           samples, plan_.dtype, false, false, split));
      const double rerun = plan_.selective_recompute
                               ? compute_.selective_recompute_seconds(gpu, workload_, first, end, plan_.tp, samples,
                                                                      plan_.dtype, split)
                               : 0;
      const double weights = plan_.schedule == PipelineSchedule::zero_bubble
                                 ? compute_.weight_gradient_seconds(gpu, workload_, first, end, plan_.tp, samples,
                                                                    plan_.dtype, split)
                                 : 0;
      const double accumulation =
          uses_bf16_optimizer(plan_.framework, plan_.dtype, plan_.zero_stage)
              ? fp32_accumulation_seconds(compute_, gpu, workload_, first, end, plan_.tp, plan_.ep)
              : 0;
      steps.backward_s = std::max(steps.backward_s, compute_.layers_seconds(gpu, workload_, first, end, plan_.tp,
                                                                            samples, plan_.dtype, true,
                                                                            plan_.recompute, split) +
                                                        rerun - weights + accumulation);
      steps.weight_s = std::max(steps.weight_s, weights);
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
        bytes += reductions * all_reduce_bytes_per_sample(layer) * samples * activation_scale();
      }
      if (all > 0) {
        // Sequence parallelism moves the same bytes as a reduce-scatter and an all-gather: two calls.
        const double each =
            plan_.splits_sequence()
                ? transfer_seconds(tp_group, CollectiveOp::reduce_scatter, bytes / all) +
                      transfer_seconds(tp_group, CollectiveOp::all_gather, bytes / all) +
                      call_seconds(tp_group, CollectiveOp::reduce_scatter) +
                      call_seconds(tp_group, CollectiveOp::all_gather)
                : transfer_seconds(tp_group, CollectiveOp::all_reduce, bytes / all) +
                      call_seconds(tp_group, CollectiveOp::all_reduce);
        steps.forward_s += forward * each;
        steps.backward_s += (all - forward) * each;
      }
    }

    const auto [to_experts_s, from_experts_s] = all_to_all_seconds(s, r, first, end, mb);
    steps.forward_s += to_experts_s;
    steps.backward_s += from_experts_s;
    const auto [ring_forward_s, ring_backward_s] = context_ring_seconds(s, r, first, end, mb);
    steps.forward_s += ring_forward_s;
    steps.backward_s += ring_backward_s;

    // ZeRO-2/3 synchronise every micro-batch on the data-parallel stream, beside the compute of the whole
    // micro-batch. ZeRO-3 gathers of layers larger than the prefetch distance wait for the compute before them and
    // hold the next computation back: they add to it instead of overlapping. ZeRO-2's last reduction is counted
    // with the synchronisation after the pipeline.
    steps.final_backward_s = steps.backward_s;
    if (plan_.zero_stage >= 2 || sharding_) {
      const SyncSeconds synced = per_micro_batch_sync_seconds(s);
      const double serial      = synced.unprefetched;
      const double overlapped  = synced.all - serial;
      // The compute beside the overlapped collectives runs on the multiprocessors their kernels leave while they
      // move bytes (the calls' software costs before them hold none, as in the replay).
      const double compute = steps.forward_s + steps.backward_s;
      steps.backward_s += costmodel::contended_compute_seconds(compute, dp_compute_share(s),
                                                               std::min(overlapped, synced.moving)) -
                          compute;
      steps.backward_s = std::max(steps.backward_s, overlapped - steps.forward_s);
      steps.forward_s += serial / 2;
      steps.backward_s += serial / 2;
      if (plan_.zero_stage == 3 || sharding_)
        steps.final_backward_s = steps.backward_s;
    }

    return steps;
  }

  /// Each boundary's transfers of one full micro-batch, per replica (the slowest TP rank; each TP rank sends its
  /// 1/tp share, as the lowering does). Every replica crosses a boundary at about the same time, so a transfer
  /// shares NICs and WAN links with the other replicas' at that boundary. In the steady state the links also
  /// carry every other boundary's transfers once per micro-batch (under 1F1B activations and gradients alike,
  /// under GPipe each direction in its own phase): that sets how long a transfer keeps its way busy.
  void time_boundaries()
  {
    if (plan_.pp == 1)
      return;
    std::vector<costmodel::Flow> forward, backward;
    for (int k = 0; k + 1 < plan_.chunk_count(); ++k) { // chunk k to chunk k + 1, on their stages
      const int s = plan_.chunk_stage(k), next = plan_.chunk_stage(k + 1);
      const models::Layer& last = workload_.layers[plan_.stage_end(k, layer_count()) - 1];
      for (int r = 0; r < plan_.dp; ++r) {
        const double activation = boundary_bytes(last, workload_.seq_len, plan_, plan_.micro_batch[r], false);
        const double gradient   = boundary_bytes(last, workload_.seq_len, plan_, plan_.micro_batch[r], true);
        for (int t = 0; t < plan_.tp; ++t) {
          forward.push_back({plan_.device(s, r, t), plan_.device(next, r, t), activation});
          backward.push_back({plan_.device(next, r, t), plan_.device(s, r, t), gradient});
        }
      }
    }
    // One boundary's replicas at once, per direction.
    const std::size_t per_boundary = static_cast<std::size_t>(plan_.dp) * plan_.tp;
    std::vector<double> to_next, from_next;
    for (std::size_t first = 0; first < forward.size(); first += per_boundary) {
      const auto slice = [&](const std::vector<costmodel::Flow>& flows) {
        return std::vector<costmodel::Flow>(flows.begin() + static_cast<std::ptrdiff_t>(first),
                                            flows.begin() + static_cast<std::ptrdiff_t>(first + per_boundary));
      };
      for (double seconds : costmodel::shared_flow_seconds(cluster_, slice(forward)))
        to_next.push_back(seconds);
      for (double seconds : costmodel::shared_flow_seconds(cluster_, slice(backward)))
        from_next.push_back(seconds);
    }
    // Every boundary at once.
    std::vector<double> to_next_busy, from_next_busy;
    if (plan_.schedule == PipelineSchedule::gpipe) {
      to_next_busy   = costmodel::shared_flow_seconds(cluster_, forward);
      from_next_busy = costmodel::shared_flow_seconds(cluster_, backward);
    } else {
      std::vector<costmodel::Flow> both = forward;
      both.insert(both.end(), backward.begin(), backward.end());
      const std::vector<double> seconds = costmodel::shared_flow_seconds(cluster_, both);
      to_next_busy.assign(seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(forward.size()));
      from_next_busy.assign(seconds.begin() + static_cast<std::ptrdiff_t>(forward.size()), seconds.end());
    }
    boundary_.assign(static_cast<std::size_t>(plan_.chunk_count() - 1) * plan_.dp, {});
    const auto keep_slowest = [&](Transfer& transfer, const costmodel::Flow& flow, double alone, double busy) {
      if (alone <= transfer.seconds)
        return;
      transfer.latency_s   = cluster_.path(flow.src, flow.dst).latency_s;
      transfer.seconds     = alone;
      transfer.occupancy_s = std::max(busy - transfer.latency_s, alone - transfer.latency_s);
    };
    for (std::size_t i = 0; i < forward.size(); ++i) {
      Boundary& boundary = boundary_[i / plan_.tp];
      keep_slowest(boundary.to_next, forward[i], to_next[i], to_next_busy[i]);
      keep_slowest(boundary.from_next, backward[i], from_next[i], from_next_busy[i]);
    }
  }

  /// How much slower each data-parallel ring of stages [first, end) is when all of them synchronise at once than
  /// alone, indexed (s - first) * tp + t: rings crossing the same NIC or WAN link share it in proportion to the
  /// bytes they reduce (the stage's replicated parameters at the end of the iteration, `replicated`, or all of
  /// its parameters). Every stage synchronises at the end of the iteration; per-micro-batch synchronisation
  /// (ZeRO 2/3) is staggered by the pipeline, so only the tensor-parallel ranks of one stage meet there.
  std::vector<double> data_parallel_slowdowns(int first, int end, bool replicated) const
  {
    if (plan_.dp == 1)
      return std::vector<double>(static_cast<std::size_t>(end - first) * plan_.tp, 1.0);
    std::vector<double> bytes;
    for (int s = first; s < end; ++s)
      bytes.push_back(replicated ? replicated_params(s) : stage_params(s));
    const double largest = *std::max_element(bytes.begin(), bytes.end());
    std::vector<std::vector<costmodel::Flow>> rings;
    for (int s = first; s < end; ++s)
      for (int t = 0; t < plan_.tp; ++t) {
        // Scaled so that the largest is large enough that latency does not matter.
        const double weight = largest > 0 ? kProbeBytes * bytes[s - first] / largest : kProbeBytes;
        rings.push_back(ring_edges(dp_group(s, t), weight));
      }
    return sharing_slowdowns(rings);
  }

  /// The same for the rings that reduce routed experts' gradients (ep > 1), all at once at the end of the
  /// iteration: per stage and TP rank the slowest of its ep rings, one per expert rank.
  std::vector<double> expert_data_parallel_slowdowns() const
  {
    std::vector<double> slowdowns(static_cast<std::size_t>(plan_.pp) * plan_.tp, 1.0);
    if (plan_.ep == 1 || plan_.dp == plan_.ep)
      return slowdowns;
    std::vector<double> bytes;
    for (int s = 0; s < plan_.pp; ++s)
      bytes.push_back(stage_expert_params(s));
    const double largest = *std::max_element(bytes.begin(), bytes.end());
    std::vector<std::vector<costmodel::Flow>> rings;
    for (int s = 0; s < plan_.pp; ++s)
      for (int t = 0; t < plan_.tp; ++t)
        for (int j = 0; j < plan_.ep; ++j) {
          const double weight = largest > 0 ? kProbeBytes * bytes[s] / largest : kProbeBytes;
          rings.push_back(ring_edges(expert_dp_group(s, t, j), weight));
        }
    const std::vector<double> each = sharing_slowdowns(rings);
    for (std::size_t r = 0; r < each.size(); ++r) {
      double& slowest = slowdowns[r / static_cast<std::size_t>(plan_.ep)];
      slowest         = std::max(slowest, each[r]);
    }
    return slowdowns;
  }

  /// Each member of `group` sending `bytes` to the next, round the ring.
  static std::vector<costmodel::Flow> ring_edges(const std::vector<int>& group, double bytes)
  {
    std::vector<costmodel::Flow> edges;
    for (std::size_t i = 0; i < group.size(); ++i)
      edges.push_back({group[i], group[(i + 1) % group.size()], bytes});
    return edges;
  }

  /// For each set of flows, how much longer its slowest flow takes when every set runs at once than alone.
  std::vector<double> sharing_slowdowns(const std::vector<std::vector<costmodel::Flow>>& sets) const
  {
    std::vector<costmodel::Flow> all;
    for (const auto& set : sets)
      all.insert(all.end(), set.begin(), set.end());
    const std::vector<double> shared = costmodel::shared_flow_seconds(cluster_, all);
    std::vector<double> slowdowns;
    std::size_t i = 0;
    for (const auto& set : sets) {
      double alone = 0, together = 0;
      for (const costmodel::Flow& flow : set) {
        alone    = std::max(alone, costmodel::transfer_seconds(cluster_, flow.src, flow.dst, flow.bytes));
        together = std::max(together, shared[i++]);
      }
      slowdowns.push_back(alone > 0 ? std::max(1.0, together / alone) : 1.0);
    }
    return slowdowns;
  }

  /// The network's part of one collective of `bytes` over `group`, its bytes `slowdown` times slower than alone
  /// (links shared with other groups slow the bytes, not the wires' latency).
  double transfer_seconds(const std::vector<int>& group, CollectiveOp op, double bytes, double slowdown = 1) const
  {
    const double seconds = costmodel::collective_seconds(cluster_, group, op, algorithm_, bytes, plan_.nccl);
    if (slowdown == 1)
      return seconds;
    const double latency = costmodel::collective_seconds(cluster_, group, op, algorithm_, 0, plan_.nccl);
    return latency + slowdown * (seconds - latency);
  }

  /// The software cost of a collective of `op` that takes `calls` library calls over `group`: the library's
  /// latency beyond moving the bytes once, and each call's calibrated overhead (γ; 0 without calibration).
  /// Links shared with other groups slow the transfers, not this.
  double call_seconds(const std::vector<int>& group, CollectiveOp op, int calls = 1, double bytes = 0) const
  {
    const costmodel::Calibration* calibration = compute_.calibration();
    const double calibrated =
        calibration ? calls * costmodel::collective_overhead_seconds(cluster_, *calibration, group) : 0;
    return calibrated + costmodel::library_latency_seconds(cluster_, group, op, calls, algorithm_, plan_.nccl, bytes);
  }

  /// Collective time of stage `s`'s `bytes` split in buckets of the plan's size (the lowering's packing), or one
  /// per chunk where the framework does not bucket them (Plan::buckets_chunk), the bytes `slowdown` times slower
  /// than a group's alone, plus each bucket's call. Under interleaving a stage's later chunks reduce during its
  /// first chunk's backward, which this counts as after it: an upper bound.
  double bucketed_seconds(const std::vector<int>& group, CollectiveOp op, double bytes, double slowdown, int s) const
  {
    if (bytes <= 0) // the lowering issues nothing
      return 0;
    if (!plan_.buckets_chunk(s))
      return plan_.virtual_stages *
             (transfer_seconds(group, op, bytes / plan_.virtual_stages, slowdown) + call_seconds(group, op));
    const double capacity = plan_.gradient_bucket_bytes();
    const double full     = std::floor(bytes / capacity);
    const double rest     = bytes - full * capacity;
    double seconds        = full * transfer_seconds(group, op, capacity, slowdown);
    if (rest > 0)
      seconds += transfer_seconds(group, op, rest, slowdown);
    const double calls = full + (rest > 0 ? 1 : 0);
    return seconds + calls * call_seconds(group, op);
  }

  /// Per-micro-batch synchronisation of stage `s` on its slowest data-parallel group, and the part of it made of
  /// ZeRO-3 gathers that the framework cannot prefetch (zero3_prefetch_layers 0: they wait for the compute
  /// before them), on the group slowest at those.
  struct SyncSeconds {
    double all          = 0;
    double unprefetched = 0;
    double moving       = 0; ///< of the prefetched part, the transfers: while NCCL's kernels run beside the compute
  };
  SyncSeconds per_micro_batch_sync_seconds(int s) const
  {
    if (plan_.dp == 1)
      return {};
    if (sharding_) {
      const double seconds = sharded_sync_seconds(s);
      return {seconds, 0, seconds};
    }
    // Routed experts (ep > 1) are reduced apart, over the replicas that hold them (none when each is alone).
    const double experts = stage_expert_params(s);
    const double bytes   = (stage_params(s) - experts) * gradient_bytes_per_param();
    SyncSeconds worst;
    for (int t = 0; t < plan_.tp; ++t) {
      const auto group      = dp_group(s, t);
      const double slowdown = stage_slowdown_[s * plan_.tp + t];
      if (plan_.zero_stage != 3) {
        double seconds = bucketed_seconds(group, CollectiveOp::reduce_scatter, bytes, slowdown, s);
        if (experts > 0 && plan_.dp > plan_.ep)
          seconds += bucketed_seconds(expert_dp_group(s, t, 0), CollectiveOp::reduce_scatter,
                                      experts * gradient_bytes_per_param(), expert_end_slowdown_[s * plan_.tp + t], s);
        worst.all    = std::max(worst.all, seconds);
        worst.moving = std::max(worst.moving, seconds);
        continue;
      }
      // ZeRO-3 goes layer by layer, as the lowering issues it: each layer's parameters gathered before its
      // forward and again before its backward, its gradients reduce-scattered after; every collective pays its
      // own latency and calls.
      SyncSeconds seconds;
      for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l) { // one chunk with ZeRO-3
        const models::Layer& layer = workload_.layers[l];
        const double params        = layer.params / plan_.tp * zero3_partitioned_share(layer, plan_);
        if (params <= 0)
          continue;
        const int calls       = zero3_calls(layer, plan_);
        const double gathered = params * dtype_bytes(plan_.dtype);
        const double reduced  = params * gradient_bytes_per_param();
        // DeepSpeed before 0.6 calls each through torch.distributed's list API (costmodel/list_collectives.hpp).
        const bool lists      = zero3_list_collectives(plan_.framework);
        const auto gather     = [&](int n, double moved) {
          return transfer_seconds(group, CollectiveOp::all_gather, moved, slowdown) +
                 call_seconds(group, CollectiveOp::all_gather, n, moved) +
                 (lists ? costmodel::list_calls_seconds(cluster_, group, CollectiveOp::all_gather, n, moved) : 0);
        };
        // Before the backward, with what the recompute's gather released (zero3_backward_regather).
        const Zero3Regather again = zero3_backward_regather(layer, plan_);
        const double regathered   = layer.params / plan_.tp * again.share * dtype_bytes(plan_.dtype);
        const double gathers      = gather(calls, gathered) + gather(calls + again.calls, gathered + regathered);
        const double scatter = transfer_seconds(group, CollectiveOp::reduce_scatter, reduced, slowdown);
        seconds.all += gathers + scatter + call_seconds(group, CollectiveOp::reduce_scatter, calls, reduced) +
                       (lists ? costmodel::list_calls_seconds(cluster_, group, CollectiveOp::reduce_scatter, calls,
                                                              reduced)
                              : 0);
        seconds.moving += scatter;
        if (zero3_prefetch_layers(layer, plan_) == 0)
          seconds.unprefetched += gathers;
        else
          seconds.moving += transfer_seconds(group, CollectiveOp::all_gather, gathered, slowdown) +
                            transfer_seconds(group, CollectiveOp::all_gather, gathered + regathered, slowdown);
      }
      worst.all          = std::max(worst.all, seconds.all);
      worst.unprefetched = std::max(worst.unprefetched, seconds.unprefetched);
      worst.moving       = std::max(worst.moving, seconds.moving);
    }
    return worst;
  }

  /// With layer_sharding: per sharded slice, gathers before forward and backward and a reduce-scatter after
  /// backward, each a collective of its own (as the lowering issues them).
  double sharded_sync_seconds(int s) const
  {
    double worst = 0;
    for (int t = 0; t < plan_.tp; ++t) {
      const auto group      = dp_group(s, t);
      const double slowdown = stage_slowdown_[s * plan_.tp + t];
      double seconds = 0, calls = 0;
      for (int l = plan_.stage_starts[s]; l < plan_.stage_end(s, layer_count()); ++l) { // one chunk when sharding
        const LayerSharding& choice = plan_.layer_sharding[l];
        if (choice.sharded == 0 || workload_.layers[l].params <= 0)
          continue;
        const double bytes = workload_.layers[l].params / plan_.tp / choice.slices * gradient_bytes_per_param();
        seconds += choice.sharded * (2 * transfer_seconds(group, CollectiveOp::all_gather, bytes, slowdown) +
                                     transfer_seconds(group, CollectiveOp::reduce_scatter, bytes, slowdown));
        calls += 3 * choice.sharded;
      }
      worst = std::max(worst, seconds + calls / 3 * (2 * call_seconds(group, CollectiveOp::all_gather) +
                                                      call_seconds(group, CollectiveOp::reduce_scatter)));
    }
    return worst;
  }

  /// Parameters of layer `l` on one device whose gradients are reduced in buckets (all but sharded slices).
  double bucketed_layer_params(int l) const
  {
    if (plan_.ep > 1) // the routed experts' gradients are reduced apart
      return (workload_.layers[l].params - workload_.layers[l].expert_params) / plan_.tp;
    const double params = workload_.layers[l].params / plan_.tp;
    return sharding_ ? params * (1 - plan_.layer_sharding[l].fraction()) : params;
  }

  /// Parameters of stage `s` kept whole on every replica.
  double replicated_params(int s) const
  {
    if (!sharding_ && plan_.ep == 1)
      return stage_params(s);
    double params = 0;
    for (const auto& [first, end] : plan_.stage_ranges(s, layer_count()))
      for (int l = first; l < end; ++l)
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
    std::vector<costmodel::Flow> edges;
    for (int r = 0; r < plan_.dp; ++r)
      for (int t = 0; t < plan_.tp; ++t) {
        edges.push_back({plan_.device(0, r, t), plan_.device(plan_.pp - 1, r, t), kProbeBytes});
        edges.push_back({plan_.device(plan_.pp - 1, r, t), plan_.device(0, r, t), kProbeBytes});
      }
    const double slowdown = sharing_slowdowns({edges}).front();
    double slowest        = 0;
    for (const costmodel::Flow& edge : edges) {
      const std::vector<int> pair = {edge.src, edge.dst};
      slowest = std::max(slowest, transfer_seconds(pair, CollectiveOp::all_reduce, bytes, slowdown) +
                                      call_seconds(pair, CollectiveOp::all_reduce));
    }
    return slowest;
  }

  /// Synchronisation after stage `s`'s last backward on TP rank `t`, less what the backward hides.
  double data_parallel_sync_seconds(int s, int t) const
  {
    if (plan_.dp == 1 || plan_.zero_stage == 3)
      return 0;
    const auto group      = dp_group(s, t);
    const double slowdown = end_slowdown_[s * plan_.tp + t];
    const double bytes    = replicated_params(s) * gradient_bytes_per_param();
    const double weights =
        replicated_params(s) * gathered_bytes_per_param(workload_.layers, plan_.stage_ranges(s, layer_count()), plan_);
    double gather         = plan_.shards_optimizer_states()
                                ? bucketed_seconds(group, CollectiveOp::all_gather, weights, slowdown, s)
                                : 0;
    // ZeRO 0-2 reduce during the last backward: buckets overlap it, the last bucket never does.
    const CollectiveOp op = plan_.zero_stage == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
    double reduce         = bucketed_seconds(group, op, bytes, slowdown, s);
    // Routed experts follow on the same stream, over the replicas holding them.
    if (const double experts = stage_expert_params(s); experts > 0 && plan_.dp > plan_.ep) {
      const auto holders   = expert_dp_group(s, t, 0);
      const double shared = expert_end_slowdown_[s * plan_.tp + t];
      reduce += bucketed_seconds(holders, op, experts * gradient_bytes_per_param(), shared, s);
      if (plan_.shards_optimizer_states())
        gather += bucketed_seconds(holders, CollectiveOp::all_gather, experts * gathered_expert_bytes_per_param(plan_),
                                   shared, s);
    }
    // A stage reduced in one bucket overlaps nothing: then reduce is the answer. The backward the buckets overlap
    // runs on the multiprocessors they leave, and so ends later (`slower`), hiding that much more of them.
    const double last        = bucketed_seconds(group, op, std::min(bytes, plan_.gradient_bucket_bytes()), slowdown, s);
    const double overlapping = overlappable_backward_seconds(s, t);
    const double beside      = std::min(std::max(0.0, reduce - last), overlapping);
    const double share       = group_share_[s * plan_.tp + t];
    const double slower      = costmodel::contended_compute_seconds(overlapping, share, beside) - overlapping;
    return slower + std::max(last, reduce - overlapping - slower) + gather;
  }

  /// The part of the slowest replica's last backward that the bucketed reduction can overlap: what remains once
  /// the first bucket is full (backward runs from the last layer; layers without parameters fill nothing). With
  /// virtual stages, the last backward of each chunk from the last to the first: a lower bound, as other
  /// micro-batches' backwards run between them.
  double overlappable_backward_seconds(int s, int t) const
  {
    if (!plan_.framework.reduce_during_backward || !plan_.buckets_chunk(s))
      return 0;
    auto ranges   = plan_.stage_ranges(s, layer_count()); // what runs after the first bucket closes
    double filled = 0;
    while (!ranges.empty() && filled < plan_.gradient_bucket_bytes()) {
      auto& [first, closing] = ranges.back();
      while (closing > first && filled < plan_.gradient_bucket_bytes()) {
        --closing;
        filled += bucketed_layer_params(closing) * gradient_bytes_per_param();
      }
      if (closing == first)
        ranges.pop_back();
    }
    if (filled < plan_.gradient_bucket_bytes())
      return 0;
    double slowest = 0;
    for (int r = 0; r < plan_.dp; ++r) {
      if (alike_[r] != r) // runs its backward as that one does
        continue;
      double seconds = 0;
      const GpuSpec& gpu    = cluster_.gpu_of(plan_.device(s, r, t));
      const double samples  = static_cast<double>(plan_.micro_batch[r]) / plan_.cp;
      for (const auto& [first, closing] : ranges) {
        if (plan_.schedule == PipelineSchedule::zero_bubble) { // the last weight-gradient step's rest
          seconds += compute_.weight_gradient_seconds(gpu, workload_, first, closing, plan_.tp, samples, plan_.dtype,
                                                      plan_.splits_sequence());
          continue;
        }
        seconds += compute_.layers_seconds(gpu, workload_, first, closing, plan_.tp, samples, plan_.dtype, true,
                                           plan_.recompute, plan_.splits_sequence());
        if (plan_.selective_recompute)
          seconds += compute_.selective_recompute_seconds(gpu, workload_, first, closing, plan_.tp, samples,
                                                          plan_.dtype, plan_.splits_sequence());
      }
      slowest = std::max(slowest, seconds);
    }
    return slowest;
  }

  double optimizer_seconds(int s) const
  {
    double params = stage_params(s) / (plan_.shards_optimizer_states() ? plan_.dp : 1);
    if (plan_.ep > 1 && plan_.shards_optimizer_states())
      params = (stage_params(s) - stage_expert_params(s)) / plan_.dp +
               stage_expert_params(s) / (plan_.dp / plan_.ep);
    if (sharding_)
      params = replicated_params(s) + (stage_params(s) - replicated_params(s)) / plan_.dp;
    std::set<int> gpus; // each GPU type of the stage once
    for (int r = 0; r < plan_.dp; ++r)
      for (int t = 0; t < plan_.tp; ++t)
        gpus.insert(cluster_.device(plan_.device(s, r, t)).gpu);
    double seconds = 0;
    for (int gpu : gpus)
      seconds = std::max(seconds, compute_.optimizer_seconds(cluster_.gpus()[gpu], params));
    return seconds;
  }

  const Plan& plan_;
  const Cluster& cluster_;
  const models::Workload& workload_;
  const costmodel::ComputeModel& compute_;
  costmodel::Algorithm algorithm_;
  bool sharding_;                      ///< layer_sharding shards some layer
  std::vector<int> alike_;             ///< per replica: the first alike with it (fold.hpp's alike_replicas)
  /// (stage, ring bytes) -> per context-parallel group of TP rank 0: how much the stage's rings slow its ring.
  mutable std::map<std::pair<int, double>, std::vector<double>> context_ring_slowdowns_;
  /// (stage, group's first replica, layers [first, end), micro-batch, GPU) -> context_ring_seconds
  mutable std::map<std::tuple<int, int, int, int, int, int>, std::pair<double, double>> context_ring_s_;
  std::vector<double> end_slowdown_;   ///< [s * tp + t]: every data-parallel group at once
  std::vector<double> expert_end_slowdown_; ///< [s * tp + t]: every experts' gradient group at once
  std::vector<double> stage_slowdown_; ///< [s * tp + t]: the groups of one stage at once
  /// [s * tp + t]: the largest share of its GPU the group's collectives hold on a member
  /// (costmodel::collective_multiprocessor_shares)
  std::vector<double> group_share_;
  /// One micro-batch's transfer over a boundary, the slowest TP rank's.
  struct Transfer {
    double seconds     = 0; ///< with the other replicas crossing the boundary at once
    double latency_s   = 0; ///< of its path
    double occupancy_s = 0; ///< its links' busy time per micro-batch with every boundary's transfers on them

    /// Its time when the other boundaries' transfers keep its links busy for their share of `period`.
    double contended_s(double period) const
    {
      const double own    = seconds - latency_s;
      const double others = std::max(0.0, occupancy_s - own);
      const double load   = period > 0 ? std::min(kMaxLoad, others / period) : 0;
      return latency_s + own / (1 - load);
    }
  };
  struct Boundary {
    Transfer to_next;   ///< activations to the next stage
    Transfer from_next; ///< gradients back from it
  };
  std::vector<Boundary> boundary_; ///< [k * dp + r]: chunk k's boundary transfers for replica r
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
