#pragma once
/// Error types shared by every HetSim library. The CLI turns each into one line and exit code 2.

#include <stdexcept>
#include <string>
#include <string_view>

namespace hetsim {

/// Base of every error HetSim reports to a user.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Malformed or inconsistent input: the message names the file, the JSON path and what was expected.
class InputError : public Error {
public:
  using Error::Error;
};

/// A plan that is valid but cannot run, e.g. a device runs out of memory.
class InfeasiblePlan : public Error {
public:
  using Error::Error;
};

/// A requested backend (executor, library) is not part of this build.
class BackendUnavailable : public Error {
public:
  using Error::Error;
};

/// Broken internal invariant: a bug in HetSim, never a user mistake.
class InternalError : public Error {
public:
  using Error::Error;
};

[[noreturn]] void fail_assertion(const char* expression, const char* file, int line);

/// A user's string as an error message shows it: in single quotes, control characters escaped (`\n`, `\t`,
/// `\x1b`) so the message stays on one line, and cut with `…` beyond `limit` characters.
std::string quote(std::string_view text, std::size_t limit = 80);

/// A message as the CLI prints it: on one line whatever it holds. Control characters become `\n`, `\x1b`,
/// and Unicode's bidirectional controls (U+202A-U+202E, U+2066-U+2069, which reorder what a terminal shows)
/// become `\u202e`; everything else is kept.
std::string single_line(std::string_view message);

/// A file's path as messages show it: as it is, or quoted and escaped when it holds a control character (a name
/// read from a JSON file may hold a newline).
std::string shown_path(std::string_view path);

/// Whether `text` holds a character single_line() would escape: names a user gives (of nodes, regions, jobs,
/// clusters) are refused with it, so that every message and report shows them as they are.
bool holds_control_characters(std::string_view text);

} // namespace hetsim

#define HETSIM_ASSERT(expr) ((expr) ? static_cast<void>(0) : ::hetsim::fail_assertion(#expr, __FILE__, __LINE__))
