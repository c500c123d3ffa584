#pragma once
/// Progress of long searches and sweeps on stderr, with the time elapsed and an estimate of the time left: a line
/// redrawn in place on a terminal, a line per tenth otherwise (a log).

#include "strategies/search/planner.hpp"

namespace hetsim::cli {

strategies::ProgressFn stderr_progress();

} // namespace hetsim::cli
