#pragma once
/// Per-device memory of a plan: model states split by ZeRO stage, activations in flight, workspace.

#include "core/error.hpp" // InfeasiblePlan
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <optional>
#include <string>
#include <vector>

namespace hetsim::strategies {

/// NCCL's GPU memory on one device, per communicator (zero where the plan has none, or gives
/// communicator_buffer_mib: then `total` only).
struct NcclMemory {
  double tensor_parallel = 0;
  double data_parallel   = 0;
  double pipeline        = 0; ///< the point-to-point links to its pipeline neighbours
  double experts         = 0; ///< the all-to-all peers and the experts' gradient group
  double total           = 0;
};

/// Bytes one device needs. Model states are 16-bit weights and gradients plus fp32 master weights and two Adam
/// moments (12 bytes per parameter; 8 in fp32 training, whose weights are the master copy), split by ZeRO:
/// stage 1 shards the optimizer states over the data-parallel group, 2 also the gradients, 3 everything plus a
/// buffer holding the two largest layers' gathered weights. Tensor parallelism divides the parameters and, as
/// with Megatron sequence parallelism, the activations; context parallelism divides the activations.
struct DeviceMemory {
  int device = 0;
  std::string gpu;             ///< GPU name, for messages
  std::string gpu_origin;      ///< the cluster file's field that chose the GPU (Device::gpu_origin), or empty
  double parameter_bytes  = 0; ///< 16-bit weights (and gathered ZeRO-3 buffers)
  double gradient_bytes   = 0;
  double optimizer_bytes  = 0; ///< fp32 master weights + Adam moments
  double activation_bytes = 0;
  /// What the framework holds whatever the batch: CUDA context, NCCL buffers of each communicator, cuBLAS
  /// workspace (FrameworkSettings).
  double framework_bytes  = 0;
  /// Of framework_bytes, NCCL's buffers for the device's communicators (costmodel/nccl_memory.hpp).
  NcclMemory nccl;
  /// The peak of short-lived buffers beyond the kept activations: during training the caching allocator's
  /// slack and the larger of the loss's fp32 logit gradient and one attention's s x s score gradients; at the
  /// optimizer step (activations freed) the fp32 copy of the gradients for the master weights.
  double transient_bytes  = 0;
  double workspace_bytes  = 0; ///< what the user gives for the framework's buffers instead (--workspace)
  double capacity_bytes   = 0;

  double total_bytes() const
  {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + framework_bytes +
           transient_bytes + workspace_bytes;
  }
  double over_bytes() const { return total_bytes() - capacity_bytes; } ///< positive when it does not fit
};

/// Bytes of optimizer state per parameter: fp32 master weights and two Adam moments, 12; in fp32 training the
/// weights are the master copy, 8.
double optimizer_bytes_per_parameter(Dtype dtype);

/// Model states of one device holding `params` parameters (after the tensor-parallel split), under `zero_stage`
/// over a data-parallel group of `dp`: the rules above. `largest_two_params`: its two largest layers, which
/// ZeRO-3 gathers whole. Activations and workspace are left empty.
DeviceMemory zero_model_states(double params, double largest_two_params, int zero_stage, int dp, Dtype dtype);
/// The 16-bit copies of `layer`'s product weights torch.autocast casts and caches through a step, elements per
/// member of a tensor-parallel group of `tp`.
double autocast_weight_elements(const models::Layer& layer, int tp);
/// Model states under torch.autocast with fp32 weights (plan dtype 16-bit): the weights, their gradients and the
/// optimizer's copy are the fp32 weights themselves (4 + 4 + 8 bytes per parameter for Adam), and the forward's
/// 16-bit casts of `cast_elements` product weights are cached and kept for backward. Activations are untouched.
DeviceMemory autocast_model_states(DeviceMemory states, double cast_elements, Dtype dtype);
/// Memory of every device the plan uses, indexed by device id. Activations are kept for the micro-batches in
/// flight: all of them with GPipe, min(grad_accum, pp - stage) with 1F1B, min(grad_accum, pp) with zero bubble, and with interleaved 1F1B the most
/// chunk passes its order has begun and not ended at once (warm-up + 1 on the first stage, each of one chunk);
/// with recompute only each layer's boundary activation is kept per micro-batch in flight, plus one layer's
/// saved activations to recompute it.
std::vector<DeviceMemory> plan_memory(const Plan& plan, const Problem& problem);
/// One device of `stage` and `replica` if the stage held layers [first, end): parameters, gradients, optimizer
/// states and activations as plan_memory counts them (device, workspace and capacity left empty). Planners
/// use it to try stage boundaries before the plan has them.
/// A planner trying many boundaries may keep what does not change between them: `data_parallel_bytes`,
/// data_parallel_communicator_bytes of the stage (worked out otherwise, at thousands of devices), and
/// `layer_kinds`, models::layer_kinds of the workload (consecutive layers of a kind are then counted once each
/// run, which makes a range of a 10,000-layer model cost its kinds rather than its layers).
DeviceMemory stage_device_memory(const Plan& plan, const Problem& problem, int stage, int first, int end, int replica,
                                 std::optional<double> data_parallel_bytes = std::nullopt,
                                 const std::vector<int>* layer_kinds      = nullptr);
/// What NCCL holds on a device of `stage` for its data-parallel communicator, one for all the stage's replicas
/// (costmodel/nccl_memory.hpp).
double data_parallel_communicator_bytes(const Plan& plan, const Cluster& cluster, int stage);
/// "; its GPU is set by cluster.json: regions[0].nodes[1].gpu", the clause that ends a message about a device
/// that does not fit, or "" for a cluster built in code.
std::string gpu_origin_clause(const std::string& gpu_origin);
/// The device with the largest overflow, or nullptr when every device fits.
const DeviceMemory* largest_overflow(const std::vector<DeviceMemory>& memory);
/// Throws InfeasiblePlan naming the device with the largest overflow and the bytes over.
void check_memory(const std::vector<DeviceMemory>& memory);

/// Whether a plan's memory fits with a margin: "fits", "at risk" (its fullest device within the memory model's
/// measured error of capacity, where a measured run may still fail) or "does not fit".
struct MemoryVerdict {
  enum class Kind { fits, at_risk, does_not_fit } kind = Kind::fits;
  const DeviceMemory* fullest = nullptr; ///< the device with the least room left, relative to its capacity
  std::string text() const;              ///< "at risk: device 3 (A100-SXM4-80GB) needs 75.1 of 79.2 GiB (95%) ..."
  const char* name() const;              ///< "fits", "at risk", "does not fit"
};
/// The predicted peak is within -4% to +9% of the measured one on the shared H100 and H200 runs
/// (docs/fidelity.md), and a measured run failed at 74.7 GiB predicted of 79.2 (94%): the caching allocator
/// fragments near capacity. Above this share of capacity a plan is at risk.
inline constexpr double kMemoryAtRiskShare = 0.91;
MemoryVerdict memory_verdict(const std::vector<DeviceMemory>& memory);

} // namespace hetsim::strategies
