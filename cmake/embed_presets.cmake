# Generates a C++ source holding every presets/<kind>/<name>.json as a string.
# Invoked with -DPRESET_DIR=... -DOUTPUT=... at build time, so editing a preset rebuilds the table.
file(GLOB_RECURSE preset_files RELATIVE "${PRESET_DIR}" "${PRESET_DIR}/*.json")
list(SORT preset_files)
set(body "")
foreach(rel IN LISTS preset_files)
  get_filename_component(kind "${rel}" DIRECTORY)
  get_filename_component(name "${rel}" NAME_WLE)
  file(READ "${PRESET_DIR}/${rel}" content)
  string(APPEND body "      {\"${kind}\", \"${name}\", R\"hetsim_preset(${content})hetsim_preset\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from presets/ by cmake/embed_presets.cmake; do not edit.\n#include \"core/presets.hpp\"\n\nnamespace hetsim {\n\nconst std::vector<Preset>& embedded_presets()\n{\n  static const std::vector<Preset> table = {\n${body}  };\n  return table;\n}\n\n} // namespace hetsim\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
