# sim/'s rooms: platform <- replay <- report <- simulate. Slowdowns sit with the platform because the platform is
# built with them (as speed and bandwidth profiles); LinkUsage because it follows the platform's routes and links,
# and both the replay (which records it) and the report (link_report) read it. The report reads a finished replay
# (critical_path walks its tasks); simulate ties replay and report together for the commands, and rescore,
# shared_jobs and replay_calibration call simulate. report_format sits in report: only report and simulate files
# print with it.
set(kRooms platform replay report simulate)

function(room_of path out_room out_detail)
  if(path MATCHES "^([^/]+)/[^/]+$")
    set(${out_room} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out_room} "" PARENT_SCOPE)
  endif()
  set(${out_detail} "" PARENT_SCOPE)
endfunction()

# A room includes itself and the rooms below it.
function(include_allowed file room detail target target_room target_detail out_ok)
  list(FIND kRooms "${room}" rank)
  list(FIND kRooms "${target_room}" target_rank)
  if(target_rank GREATER_EQUAL 0 AND target_rank LESS_EQUAL rank)
    set(${out_ok} TRUE PARENT_SCOPE)
  else()
    set(${out_ok} FALSE PARENT_SCOPE)
  endif()
endfunction()
