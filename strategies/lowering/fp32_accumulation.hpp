#pragma once
/// DeepSpeed's BF16_Optimizer adds every micro-batch's bf16 gradients into its fp32 accumulator once the
/// backward is done (`update_hp_grads`, a Python loop over the parameters): passes over all of a stage's
/// parameters, one cast and one add per parameter tensor, that no other framework runs per micro-batch.

#include "core/gpu_spec.hpp"
#include "costmodel/compute.hpp"
#include "models/workload.hpp"

namespace hetsim::strategies {

/// Seconds one member of a tensor-parallel group of `tp` (expert-parallel group of `ep`) spends after a
/// micro-batch's backward over layers [first, end) adding its gradients into the fp32 accumulator, for plans
/// that run the BF16_Optimizer (uses_bf16_optimizer).
double fp32_accumulation_seconds(const costmodel::ComputeModel& model, const GpuSpec& gpu,
                                 const models::Workload& workload, int first, int end, int tp, int ep);

} // namespace hetsim::strategies
