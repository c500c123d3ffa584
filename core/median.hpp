#pragma once
/// The median of repeated measurements: one typical value, robust to a hiccup in any single one.

#include <vector>

namespace hetsim {

/// The middle value, or the mean of the two middle ones; `values` must not be empty.
double median(std::vector<double> values);

} // namespace hetsim
