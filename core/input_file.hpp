#pragma once
/// Reading an input file whole, bounded: a file past its bound (or an endless one, /dev/zero) is refused in one
/// line naming it and the bound, after reading no more than the bound, instead of filling memory first.

#include "core/input_stream.hpp"

#include <cstddef>
#include <string>

namespace hetsim {

/// The bound on a cluster, model, plan, calibration, profile or sweep file: the largest HetSim's own inputs
/// reach are a few megabytes (a 16,384-device cluster file, a calibration of many link classes).
constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;

/// The bytes of `file`, at most `bound` of them; an unreadable file, a directory, one past the bound, or a pipe
/// silent for `silent_pipe_s` is an InputError.
std::string read_input_file(const std::string& file, std::size_t bound = kMaxInputFileBytes,
                            double silent_pipe_s = silent_pipe_seconds());

/// An input named inside another file (`beside`, a sweep spec or a jobs file): `preset:NAME` and absolute paths
/// as they are, relative paths relative to that file's folder, so that a file can move with the files it names.
std::string input_beside(const std::string& entry, const std::string& beside);

} // namespace hetsim
