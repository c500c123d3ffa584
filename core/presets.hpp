#pragma once
/// Input files compiled into the binary (clusters, models, plans), so `preset:NAME` works from any directory.

#include <string>
#include <vector>

namespace hetsim {

struct Preset {
  std::string kind; ///< "cluster", "model" or "plan"
  std::string name;
  std::string text; ///< the JSON file's content
};

const std::vector<Preset>& presets();
/// The preset of that kind and name, or nullptr.
const Preset* find_preset(const std::string& kind, const std::string& name);
/// Comma-separated names of one kind, for error messages.
std::string preset_names(const std::string& kind);

/// The text of `preset:NAME` or of a file, with the name to use in messages.
struct InputText {
  std::string origin;
  std::string text;
};
/// An unknown preset or an unreadable file is an InputError.
InputText read_input(const std::string& kind, const std::string& file_or_preset);

} // namespace hetsim
