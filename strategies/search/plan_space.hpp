#pragma once
/// The building blocks 3D planners share: parallelism degrees, micro-batch sizes, node-first placement and
/// plans with one micro-batch size on every replica.

#include "core/cluster.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace hetsim::strategies {

struct Degrees {
  int tp                                = 1;
  int pp                                = 1;
  int dp                                = 1;
  bool operator==(const Degrees&) const = default;
};

/// Positive divisors of n, ascending.
std::vector<int> divisors(int n);

/// The largest tensor-parallel degree whose groups never straddle a node under node-first placement: the
/// greatest common divisor of the nodes' device counts.
int max_tensor_parallel(const Cluster& cluster);

/// tensor_parallel_limit (plan_json.hpp) of the problem's model under its framework's default sequence
/// parallelism: the largest degree plan validation accepts for the planners' plans; 0 for a layer list.
int model_tensor_parallel_limit(const Problem& problem);
/// Whether `tp` splits the problem's model (divides model_tensor_parallel_limit).
bool splits_model(const Problem& problem, int tp);
/// max_tensor_parallel(cluster) further limited to the degrees that split the problem's model.
int max_tensor_parallel(const Problem& problem);

/// Every (tp, pp, dp) with tp * pp * dp = devices, tp dividing max_tp, pp at most `layer_count`, ordered by
/// tp, then pp.
std::vector<Degrees> enumerate_degrees(int devices, int layer_count, int max_tp);

/// Expert-parallel degrees a planner tries with `dp` replicas: the common divisors of dp and the model's routed
/// experts, ascending; {1} for a dense model.
std::vector<int> expert_parallel_degrees(int dp, const models::Workload& workload);

/// Context-parallel degrees a planner tries for `plan` (its tp, its dp data-parallel ranks, its framework): the
/// divisors of dp above 1 that plan_json's validation accepts (a transformer with flash attention, a sequence of
/// 2 x cp (x tp under sequence parallelism) equal chunks, not DeepSpeed, no expert parallelism); none otherwise.
std::vector<int> context_parallel_degrees(const Plan& plan, const models::Workload& workload);

/// Activation recompute a planner tries when a plan does not fit, least rerun first: none, selective (when the
/// model has operators it reruns: non-fused attention under Megatron's policy), full.
std::vector<Recompute> recompute_choices(const models::Workload& workload);
/// "" for none, "selective recompute", "recompute" (full): the candidate's note.
std::string recompute_note(Recompute choice);

/// When `global_batch` divides evenly among no data-parallel degree above 1 that `devices` allow (a prime
/// batch), one line saying which degrees it excludes and a batch that allows them; empty otherwise. Planners that
/// split the batch evenly (most) then find dp 1 only, which a user should know before reading their answer.
std::string batch_excludes_data_parallelism(int devices, long long global_batch);

/// Micro-batch sizes that split the global batch evenly over `dp` replicas (divisors of global_batch / dp);
/// empty when dp does not divide the global batch.
std::vector<int> micro_batch_sizes(int global_batch, int dp);

/// Megatron's placement: devices in node order, so that tensor-parallel ranks share a node, then data-parallel
/// replicas, then pipeline stages (rank = (stage * dp + replica) * tp + tp_rank).
std::vector<int> node_first_placement(const Cluster& cluster);

/// A 1F1B plan with the same micro-batch on every replica and the problem's dtype; grad_accum makes up the
/// global batch. With `cp` > 1 the degrees' dp data-parallel ranks hold dp / cp replicas.
Plan uniform_batch_plan(const Degrees& degrees, std::vector<int> placement, std::vector<int> stage_starts,
                        int micro_batch, const Problem& problem, int cp = 1);

/// Throws InfeasiblePlan "PLANNER: global batch N is not divisible by any data-parallel degree of the D devices"
/// followed by `limits` (what restricted the degrees).
[[noreturn]] void fail_no_data_parallel_degree(std::string_view planner, const Problem& problem,
                                               const std::string& limits = "");

/// Throws InputError unless the problem has a positive global batch.
void require_global_batch(const Problem& problem, const char* planner);

} // namespace hetsim::strategies
