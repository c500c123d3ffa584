#pragma once
/// Pipeline timing without a simulator: every stage runs its forward and backward steps in its schedule's
/// order, a step starting once the stage is free and its input has crossed the boundary. Transfers over one
/// boundary in one direction queue behind each other (each keeps the way busy for its occupancy), and none of
/// them holds the sending stage back unless sends block. This is the replay's dependency graph with fixed durations and no
/// contention beyond what the durations already hold, so bubbles, warm-up and transfer-bound steady states come
/// out of the schedule instead of a closed form.

#include <functional>
#include <vector>

namespace hetsim::costmodel {

struct PipelineStep {
  int micro_batch = 0;
  bool backward   = false;
  int chunk       = 0; ///< which of the stage's model chunks (interleaved 1F1B); chunk c of stage s is the
                       ///< pipeline's (c x stages + s)-th
  /// A backward's weight-gradient half, split off (zero bubble): it follows the stage's own input-gradient
  /// backward of the micro-batch and crosses no boundary. The backward step is then the input-gradient half.
  bool weight = false;
};

struct PipelineDurations {
  /// Seconds a step takes on a stage, everything that holds the stage's compute back included.
  std::function<double(int stage, const PipelineStep& step)> step_seconds;
  std::vector<double> forward_transfer_s;  ///< per boundary k → k+1: one micro-batch's activations
  std::vector<double> backward_transfer_s; ///< per boundary k+1 → k: one micro-batch's input gradient
  /// Per boundary and direction, how long a transfer keeps the way busy for the next one: the transfer itself,
  /// or more where its links also carry other traffic every micro-batch (empty: the transfer times).
  std::vector<double> forward_occupancy_s, backward_occupancy_s;
  /// A stage's next step waits until its send has arrived (sends on the compute stream).
  bool sends_block = false;
};

/// When each stage ends its last step, from time 0. `orders[s]` is stage s's steps: every micro-batch's forward
/// before its backward, and an order the stages can run together (GPipe, 1F1B, interleaved 1F1B). Boundaries
/// are between consecutive chunks in pipeline order (from the last stage back to the first when stages hold
/// several chunks): `*_transfer_s` and `*_occupancy_s` have one entry per boundary.
std::vector<double> pipeline_finish_seconds(const std::vector<std::vector<PipelineStep>>& orders,
                                            const PipelineDurations& durations);

} // namespace hetsim::costmodel
