#pragma once
/// Figures read from files with a bound above: a value beyond what any hardware or model has is refused where it
/// is read, since sums and products of such values leave double's range (an iteration of 1e300 s, a NaN
/// duration) without any other error.

#include "core/json_input.hpp"

namespace hetsim {

/// A number in [0, most] (`positive`: in (0, most]), else one line naming the file, the field and the bound.
double bounded_number(const JsonInput& value, double most, bool positive = false);

} // namespace hetsim
