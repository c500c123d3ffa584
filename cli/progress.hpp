#pragma once
/// Progress of long searches and sweeps on stderr, with the time elapsed and an estimate of the time left: a line
/// redrawn in place on a terminal, a line per tenth otherwise (a log).

#include "strategies/search/planner.hpp"

#include <functional>

namespace hetsim::cli {

strategies::ProgressFn stderr_progress();

/// The same for a simulation's replay, which runs in a child process whose stderr is captured: it writes to a
/// copy of this process's stderr taken now, and only once the replay has run `quiet_s` (short runs stay silent).
std::function<void(long long done, long long total)> replay_progress(double quiet_s = 2.0);

} // namespace hetsim::cli
