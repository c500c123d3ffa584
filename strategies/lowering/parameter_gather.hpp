#pragma once
/// What the distributed optimizer's all-gather of the updated weights moves after each step.

#include "models/workload.hpp"
#include "strategies/plan/plan.hpp"

#include <utility>
#include <vector>

namespace hetsim::strategies {

/// Bytes per parameter the gather of the layers in `ranges` moves: the training dtype's, but one for the weights
/// of fp8 products the plan keeps in fp8 (FrameworkSettings::fp8_param_gather). With expert parallelism the routed
/// experts' weights are gathered apart (gathered_expert_bytes_per_param) and left out here.
double gathered_bytes_per_param(const std::vector<models::Layer>& layers, const std::vector<std::pair<int, int>>& ranges,
                                const Plan& plan);
/// The same for the routed experts' own gather under expert parallelism: their weights are all fp8 products'.
double gathered_expert_bytes_per_param(const Plan& plan);

} // namespace hetsim::strategies
