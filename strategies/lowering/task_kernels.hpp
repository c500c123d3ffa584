#pragma once
/// The kernels a compute task runs: the layers' own operators (models::operator_kernels), the list the cost
/// model prices, so that what an executor runs and what the model predicts compare kernel by kernel.

#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"

#include <vector>

namespace hetsim::strategies {

/// Kernels of a forward or backward task on one member of a tp group, in launch order. A layer with operators
/// runs them (a piece of a split layer: the operators between its tensor-parallel all-reduces and
/// expert-parallel all-to-alls and around a context-parallel ring, as the plan's tp, ep and cp place them; a
/// context-parallel rank on 1/cp of the tokens; replicated operators on 1/tp of the tokens
/// with sequence parallelism; a recomputing backward: the forward again first, or under selective recompute
/// the selectively recomputed operators' forward); a layer given only by its totals runs one (M x K) * (K x N) product with
/// K its hidden size, K * N its weights on this device and M chosen for its share of the task's FLOPs. `scale`
/// multiplies hidden sizes (scale.hpp). Any other task (the optimizer step among them) has none.
std::vector<models::Kernel> task_kernels(const Task& task, const models::Workload& model, int tp, double scale,
                                         int ep = 1, bool sequence_parallel = false, int cp = 1);

} // namespace hetsim::strategies
