#pragma once
/// Writing result files without ever clobbering an input or leaving a half-written file behind.

#include <string>
#include <vector>

namespace hetsim {

/// Throws InputError when `output` names the same file as one of `inputs` (presets are ignored).
void check_output_is_not_input(const std::string& output, const std::vector<std::string>& inputs,
                               const std::string& option);
/// Writes `content` to a temporary file beside `path`, then renames it over `path`.
void write_file_atomically(const std::string& path, const std::string& content);

} // namespace hetsim
