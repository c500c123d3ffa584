#pragma once
/// "Did you mean" for a name a user mistyped: a GPU, a node, a region, a preset.

#include <string>
#include <string_view>
#include <vector>

namespace hetsim {

/// The name of `known` closest to `given` (case-insensitive edit distance), when it is close enough to be the
/// one meant: within a third of the longer name's length, at most 3 edits. Empty otherwise.
std::string closest_name(std::string_view given, const std::vector<std::string>& known);

/// " (did you mean 'NAME'?)" for closest_name(), or "" when none is close.
std::string did_you_mean(std::string_view given, const std::vector<std::string>& known);

} // namespace hetsim
