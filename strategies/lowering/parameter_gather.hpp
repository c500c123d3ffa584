#pragma once
/// What the distributed optimizer's all-gather of the updated weights moves after each step.

#include "models/workload.hpp"
#include "strategies/plan/plan.hpp"

#include <utility>
#include <vector>

namespace hetsim::strategies {

/// Bytes per parameter the gather of layers [first, end)'s dense parameters moves: the training dtype's, but one
/// for the weights of fp8 products the plan keeps in fp8 (FrameworkSettings::fp8_param_gather). Routed experts'
/// weights are left out, as their gather is apart.
double gathered_bytes_per_param(const std::vector<models::Layer>& layers, const std::vector<std::pair<int, int>>& ranges,
                                const Plan& plan);

} // namespace hetsim::strategies
