#pragma once
/// Closed-form pipeline time (AMP eq. 5): with stage times t_i (forward+backward of one micro-batch,
/// including the boundary transfer) and g micro-batches, an iteration takes (g - 1) * max_i t_i + sum_i t_i.

#include <vector>

namespace hetsim::costmodel {

double pipeline_seconds(const std::vector<double>& stage_seconds, int micro_batches);

} // namespace hetsim::costmodel
