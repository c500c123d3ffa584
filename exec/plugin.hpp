#pragma once
/// Finding executor plugins by name at run time: `libhetsim_exec_<name>.so` in $HETSIM_EXECUTOR_PATH (a
/// colon-separated list), then beside the running program, then in ../lib/hetsim relative to it.

#include "exec/executor.hpp"

#include <memory>
#include <string>
#include <vector>

namespace hetsim::exec {

/// The executors this build has, sorted by name.
std::vector<std::string> list_executors();

/// Loads the plugin and creates its executor. Throws BackendUnavailable naming the executors that exist, or
/// saying why this machine cannot run the one asked for (Executor::unusable_reason).
/// The library stays loaded for the life of the process (executor threads may outlive a failed run).
std::unique_ptr<Executor> load_executor(const std::string& name);

} // namespace hetsim::exec
