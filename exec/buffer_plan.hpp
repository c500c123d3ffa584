#pragma once
/// What a rank allocates to run its share of a schedule, as a pure function of the schedule: the executors size
/// their buffers from it, so that a plan's device memory can be read without the device, and an executor runs
/// out of memory where the plan says and only there.

#include "exec/executor.hpp"
#include "exec/training_memory.hpp"

#include <algorithm>
#include <cstddef>

namespace hetsim::exec {

struct BufferPlan {
  /// The kernels' operands, in elements of the executor's compute type: one pool that every kernel of every
  /// compute task takes its A, B and C from in turn, as a caching allocator hands the same blocks to task after
  /// task, sized for the kernel that touches most (kernel_operands).
  std::size_t workspace_elements = 0;
  /// fp32 elements of the largest optimizer step.
  std::size_t optimizer_elements = 0;
  /// With Workload::hold_training_memory: the model states, and the saved activations at their most as the
  /// compute queue allocates and frees them (SavedActivations), in bytes; zero otherwise.
  ModelStateBytes states;
  std::size_t peak_activation_bytes = 0;

  /// The optimizer's buffer of an executor whose step touches `step_vectors` fp32 vectors of the optimizer's
  /// length: those, or the optimizer states when they are held and larger.
  std::size_t optimizer_bytes(std::size_t step_vectors) const
  {
    return std::max(states.optimizer, optimizer_elements * step_vectors * sizeof(float));
  }
  /// Bytes at the plan's peak for such an executor, whose compute type takes `element_bytes`.
  std::size_t peak_bytes(std::size_t element_bytes, std::size_t step_vectors) const
  {
    return workspace_elements * element_bytes + optimizer_bytes(step_vectors) + states.parameters +
           states.gradients + peak_activation_bytes;
  }
};

/// The buffer plan of `rank`'s compute tasks in `workload`.
BufferPlan buffer_plan(const Workload& workload, int rank);

} // namespace hetsim::exec
