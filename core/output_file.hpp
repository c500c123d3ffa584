#pragma once
/// Writing result files without ever clobbering an input, following a planted link or leaving a half-written
/// file behind.

#include "core/input_stream.hpp"

#include <string>
#include <utility>
#include <vector>

namespace hetsim {

/// Before any work: throws InputError, naming `option` and the path, when `output` names the same file as one
/// of `inputs` (presets are ignored), is empty, is a directory, a link to nothing or a file the user may not
/// write (read-only), or lies in a directory that is not there or not writable.
void check_output(const std::string& output, const std::vector<std::string>& inputs, const std::string& option);

/// Before any work: throws InputError naming both options when two outputs (option, path) name one file, which
/// would keep only the last one written. Devices and pipes (/dev/null, /dev/stdout) may take several.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// Writes `content` to `path`. A regular file, or a new one, is written whole or not at all: into a temporary
/// file of a unique name beside it, created exclusively (never through a link), then renamed over it. A device,
/// a pipe or a link (/dev/null, /dev/stdout) is written into in place and never replaced; a link to nothing is
/// refused.
/// A named pipe no process reads is waited on for `silent_pipe_s` (core/input_stream.hpp), then refused.
void write_file_atomically(const std::string& path, const std::string& content,
                           double silent_pipe_s = silent_pipe_seconds());

} // namespace hetsim
