#pragma once
/// Per-device memory of a plan: model states split by ZeRO stage, activations in flight, workspace.

#include "strategies/plan.hpp"
#include "strategies/problem.hpp"

#include <vector>

namespace hetsim::strategies {

struct DeviceMemory {
  int device                = 0;
  double parameter_bytes    = 0; ///< 16-bit weights (and gathered ZeRO-3 buffers)
  double gradient_bytes     = 0;
  double optimizer_bytes    = 0; ///< fp32 master weights + Adam moments
  double activation_bytes   = 0;
  double workspace_bytes    = 0;
  double capacity_bytes     = 0;

  double total_bytes() const
  {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + workspace_bytes;
  }
};

/// Memory of every device the plan uses, indexed by device id.
std::vector<DeviceMemory> plan_memory(const Plan& plan, const Problem& problem);
/// Throws InfeasiblePlan naming the device with the largest overflow and the bytes over.
void check_memory(const std::vector<DeviceMemory>& memory);

} // namespace hetsim::strategies
