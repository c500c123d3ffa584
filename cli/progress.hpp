#pragma once
/// Progress of long searches on stderr: a line redrawn in place on a terminal, a line per tenth otherwise.

#include "strategies/search/planner.hpp"

namespace hetsim::cli {

strategies::ProgressFn stderr_progress();

} // namespace hetsim::cli
