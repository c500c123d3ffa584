#pragma once
/// Plan -> Schedule lowering.

#include "strategies/plan.hpp"
#include "strategies/problem.hpp"
#include "strategies/schedule.hpp"

namespace hetsim::strategies {

/// Lowers a validated plan: per device, forward/backward of its stage for each micro-batch in GPipe or 1F1B
/// order, activation send/recv between stages, Megatron tensor-parallel all-reduces inside each layer,
/// data-parallel synchronisation according to the ZeRO stage, and the optimizer step.
Schedule lower(const Plan& plan, const Problem& problem);

} // namespace hetsim::strategies
