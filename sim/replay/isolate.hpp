#pragma once
/// Runs a piece of work in a forked child process and brings its result back as bytes.
///
/// Why: SimGrid keeps process-wide state that outlives its engine (see engine.hpp), so one process can run one
/// simulation. Tests, benchmarks and planners that re-score many plans simulate many times; each simulation runs
/// in a child forked from the caller, which sees the caller's inputs for free (copy-on-write) and writes only its
/// result into a pipe. The parent never creates a SimGrid engine.
///
/// Errors: a hetsim::Error thrown in the child is rethrown in the parent with the same type and message
/// (InputError, InfeasiblePlan, BackendUnavailable, InternalError, other Errors as Error); any other exception
/// becomes an InternalError. A child that dies (a SimGrid assertion aborts, a crash) becomes an InternalError
/// naming the signal, with the end of what the child wrote to stderr. The child's stderr is captured, so
/// SimGrid's messages never reach the terminal on success.

#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hetsim::sim {

/// Runs `body` in a child process and returns what it returned. `what` names the work in error messages.
std::string run_isolated(const std::function<std::string()>& body, std::string_view what = "simulation");

/// Raw bytes of a vector of trivially copyable values (to carry a result across run_isolated).
template <class T>
std::string to_bytes(const std::vector<T>& values)
{
  static_assert(std::is_trivially_copyable_v<T>);
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

/// Inverse of to_bytes.
template <class T>
std::vector<T> from_bytes(std::string_view bytes)
{
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

} // namespace hetsim::sim
