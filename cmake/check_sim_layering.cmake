cmake_policy(VERSION 3.25)
# cmake -DSIM_DIR=… -P check_sim_layering.cmake
# Fails when a file of sim/ is in no room, or includes a room above its own: platform <- replay <- report <-
# simulate. Slowdowns sit with the platform because the platform is built with them (as speed and bandwidth
# profiles); LinkUsage because it follows the platform's routes and links, and both the replay (which records it)
# and the report (link_report) read it. The report reads a finished replay (critical_path walks its tasks);
# simulate ties replay and report together for the commands, and rescore, shared_jobs and replay_calibration
# call simulate. report_format sits in report: only report and simulate files print with it.
set(kRooms platform replay report simulate)

function(room_of path out_room)
  if(path MATCHES "^([^/]+)/[^/]+$")
    set(${out_room} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out_room} "" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE files RELATIVE "${SIM_DIR}" "${SIM_DIR}/*.hpp" "${SIM_DIR}/*.cpp")
set(violations "")
set(checked 0)
foreach(file IN LISTS files)
  room_of("${file}" room)
  list(FIND kRooms "${room}" rank)
  if(rank LESS 0)
    string(APPEND violations "\n  ${file}: not in a room (${kRooms})")
    continue()
  endif()
  file(STRINGS "${SIM_DIR}/${file}" includes REGEX "^#include \"sim/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"sim/([^\"]+)\".*" "\\1" target "${line}")
    math(EXPR checked "${checked} + 1")
    room_of("${target}" target_room)
    list(FIND kRooms "${target_room}" target_rank)
    if(target_rank LESS 0 OR target_rank GREATER rank)
      string(APPEND violations "\n  ${file} includes sim/${target}")
    endif()
  endforeach()
endforeach()

list(LENGTH files file_count)
if(file_count EQUAL 0 OR checked EQUAL 0)
  message(FATAL_ERROR "no sim sources found under '${SIM_DIR}'")
endif()
if(violations)
  message(FATAL_ERROR "sim/ includes against the rooms' order:${violations}")
endif()
message(STATUS "sim layering: ${checked} includes in ${file_count} files, all pointing down")
