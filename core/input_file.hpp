#pragma once
/// Reading an input file whole, bounded: a file past its bound (or an endless one, /dev/zero) is refused in one
/// line naming it and the bound, after reading no more than the bound, instead of filling memory first.

#include <cstddef>
#include <string>

namespace hetsim {

/// The bound on a cluster, model, plan, calibration, profile or sweep file: the largest HetSim's own inputs
/// reach are a few megabytes (a 16,384-device cluster file, a calibration of many link classes).
constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;
/// The bound on a trace: HetSim's own of thousands of devices and PyTorch profiler traces of large steps run to
/// gigabytes (a 210 MB gzipped trace inflates several times).
constexpr std::size_t kMaxTraceFileBytes = std::size_t{8} << 30;

/// The bytes of `file`, at most `bound` of them; an unreadable file or one past the bound is an InputError.
std::string read_input_file(const std::string& file, std::size_t bound = kMaxInputFileBytes);

/// An input named inside another file (`beside`, a sweep spec or a jobs file): `preset:NAME` and absolute paths
/// as they are, relative paths relative to that file's folder, so that a file can move with the files it names.
std::string input_beside(const std::string& entry, const std::string& beside);

} // namespace hetsim
