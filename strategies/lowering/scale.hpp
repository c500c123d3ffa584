#pragma once
/// A Schedule run at a fraction of the model's size: every hidden size multiplied by `scale` (`hetsim run
/// --scale`), the tasks and their order unchanged. FLOPs and parameters shrink by its square; bytes of
/// parameters and gradients (the data-parallel stream) by its square too, activations (pipeline and
/// tensor-parallel streams) by it. The one definition of what a scaled run does, for the executors that run
/// it and for validation, which simulates it.

#include "models/operator.hpp"
#include "strategies/lowering/schedule.hpp"

namespace hetsim::strategies {

/// FLOPs of a compute task.
double scaled_flops(const Task& task, double scale);
/// Parameters an optimizer task updates.
double scaled_params(const Task& task, double scale);
/// Bytes a communication task moves.
double scaled_bytes(const Task& task, double scale);

/// `op` in a scaled run: products keep their rows (tokens) and scale their other sides, attention keeps its
/// shape and runs scale^2 as many heads, so FLOPs and weights shrink by scale^2 as above; activation bytes by
/// scale.
models::Operator scaled_operator(models::Operator op, double scale);

/// `schedule` with every task's and collective's work scaled as above.
Schedule scale_schedule(Schedule schedule, double scale);

} // namespace hetsim::strategies
