#include "core/presets.hpp"

#include "core/closest_name.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"

namespace hetsim {

// Defined in the generated presets_data.cpp (see cmake/embed_presets.cmake).
extern const std::vector<Preset>& embedded_presets();

const std::vector<Preset>& presets()
{
  return embedded_presets();
}

const Preset* find_preset(const std::string& kind, const std::string& name)
{
  for (const auto& p : presets())
    if (p.kind == kind && p.name == name)
      return &p;
  return nullptr;
}

std::string preset_names(const std::string& kind)
{
  std::string names;
  for (const auto& p : presets())
    if (p.kind == kind)
      names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

InputText read_input(const std::string& kind, const std::string& file_or_preset)
{
  static const std::string prefix = "preset:";
  if (file_or_preset.rfind(prefix, 0) == 0) {
    const std::string name = file_or_preset.substr(prefix.size());
    const Preset* preset   = find_preset(kind, name);
    if (!preset) {
      std::vector<std::string> known;
      for (const auto& p : presets())
        if (p.kind == kind)
          known.push_back(p.name);
      throw InputError(file_or_preset + ": unknown " + kind + " preset " + quote(name) +
                       did_you_mean(name, known) + "; known: " + preset_names(kind));
    }
    return InputText{file_or_preset, preset->text};
  }
  return InputText{file_or_preset, read_input_file(file_or_preset)};
}

} // namespace hetsim
