#pragma once
/// Closed-form pipeline time (AMP eq. 5): with stage times t_i (forward+backward of one micro-batch,
/// including the boundary transfer) and g micro-batches, an iteration takes (g - 1) * max_i t_i + sum_i t_i.

#include <vector>

namespace hetsim::costmodel {

double pipeline_seconds(const std::vector<double>& stage_seconds, int micro_batches);

/// The same with the steady state set apart: once the pipeline is full each micro-batch costs the largest
/// `period` (a stage's compute, or one direction of its boundary link, which are busy at the same time), while
/// filling and draining costs the sum of `fill` (compute and transfers one after the other).
double pipeline_seconds(const std::vector<double>& fill_seconds, const std::vector<double>& period_seconds,
                        int micro_batches);

} // namespace hetsim::costmodel
