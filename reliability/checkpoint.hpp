#pragma once
/// What a checkpoint of a plan costs: the bytes each device writes, how long the writes stop training, and how
/// long a restart takes to read them back.

#include "reliability/failure_model.hpp"
#include "reliability/goodput.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <vector>

namespace hetsim::reliability {

/// Bytes of one checkpoint: every parameter once, in the training dtype, with its optimizer states (fp32 master
/// weights and two Adam moments: 12 bytes; 8 when training in fp32), as Megatron-LM's and DeepSpeed's
/// checkpoints hold them (BLOOM-176B's were 2.3 TB; 176e9 x 14 bytes is 2.46 TB).
double checkpoint_bytes(const models::Workload& workload, Dtype dtype);

/// Bytes each device writes, indexed by device id, summing to checkpoint_bytes: every device its own shard of
/// what ZeRO shards (the optimizer states from stage 1, the weights at stage 3), and what the data-parallel
/// replicas share as the plan's framework saves it (Megatron-LM: 1/dp from each replica; DeepSpeed: the first
/// replica); each in proportion to the states the memory model gives it.
std::vector<double> checkpoint_shares(const strategies::Plan& plan, const strategies::Problem& problem);

/// Daly's costs for the plan under `model`. Writing a checkpoint takes the longer of its bytes over the
/// storage's bandwidth and, on the busiest node, that node's shares over its network interface. A blocking
/// checkpoint stops training that long; an asynchronous one only for the largest share's copy to host memory,
/// and the next may not start before the write ends. A restart is the file's restart time plus reading the
/// checkpoint back as it was written.
CheckpointCosts checkpoint_costs(const FailureModel& model, const strategies::Plan& plan,
                                 const strategies::Problem& problem);

} // namespace hetsim::reliability
