cmake_policy(VERSION 3.25)
# cmake -DFOLDER=sim|strategies -DSOURCE_DIR=<repository> -P check_layering.cmake
# Fails when a file of FOLDER/ is in no room, or includes a file of FOLDER/ its room may not: the rooms and what
# each may include are in layering/FOLDER.cmake, which defines
#   kRooms                                    the rooms, bottom first;
#   room_of(path out_room out_detail)         the room of a path relative to FOLDER (and a detail, e.g. a family);
#   include_allowed(file room detail target target_room target_detail out_ok).
include("${CMAKE_CURRENT_LIST_DIR}/layering/${FOLDER}.cmake")
set(dir "${SOURCE_DIR}/${FOLDER}")

file(GLOB_RECURSE files RELATIVE "${dir}" "${dir}/*.hpp" "${dir}/*.cpp")
set(violations "")
set(checked 0)
foreach(file IN LISTS files)
  room_of("${file}" room detail)
  list(FIND kRooms "${room}" rank)
  if(rank LESS 0)
    string(APPEND violations "\n  ${file}: not in a room (${kRooms})")
    continue()
  endif()
  file(STRINGS "${dir}/${file}" includes REGEX "^#include \"${FOLDER}/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"${FOLDER}/([^\"]+)\".*" "\\1" target "${line}")
    math(EXPR checked "${checked} + 1")
    room_of("${target}" target_room target_detail)
    include_allowed("${file}" "${room}" "${detail}" "${target}" "${target_room}" "${target_detail}" ok)
    if(NOT ok)
      string(APPEND violations "\n  ${file} includes ${FOLDER}/${target}")
    endif()
  endforeach()
endforeach()

list(LENGTH files file_count)
if(file_count EQUAL 0 OR checked EQUAL 0)
  message(FATAL_ERROR "no ${FOLDER} sources found under '${dir}'")
endif()
if(violations)
  message(FATAL_ERROR "${FOLDER}/ includes against the rooms' order:${violations}")
endif()
message(STATUS "${FOLDER} layering: ${checked} includes in ${file_count} files, all pointing down")
