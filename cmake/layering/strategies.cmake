# strategies/'s rooms: plan <- lowering <- profiling <- search <- planners/<family> <- planners (the registry).
# A family may include the registry's header (its factory is declared there) and the families listed in
# kFamilyUses; no other family.
set(kRooms plan lowering profiling search family registry)
set(kFamilyUses "hethub>amp" "batch_baselines>poplar") # HetHub prices stages with AMP's costs; the baselines
                                                       # split batches with Poplar's per-device plans

function(room_of path out_room out_family)
  set(family "")
  if(path MATCHES "^planners/([^/]+)/")
    set(room family)
    set(family "${CMAKE_MATCH_1}")
  elseif(path MATCHES "^planners/")
    set(room registry)
  elseif(path MATCHES "^([^/]+)/")
    set(room "${CMAKE_MATCH_1}")
  else()
    set(room "")
  endif()
  set(${out_room} "${room}" PARENT_SCOPE)
  set(${out_family} "${family}" PARENT_SCOPE)
endfunction()

function(include_allowed file room family target target_room target_family out_ok)
  list(FIND kRooms "${room}" rank)
  list(FIND kRooms "${target_room}" target_rank)
  set(ok FALSE)
  if(target_rank GREATER_EQUAL 0 AND target_rank LESS rank)
    set(ok TRUE)
  elseif(target_room STREQUAL room AND target_family STREQUAL family)
    set(ok TRUE)
  elseif(room STREQUAL "family" AND target STREQUAL "planners/registry.hpp")
    set(ok TRUE)
  elseif(room STREQUAL "family" AND target_room STREQUAL "family" AND "${family}>${target_family}" IN_LIST kFamilyUses)
    set(ok TRUE)
  endif()
  set(${out_ok} ${ok} PARENT_SCOPE)
endfunction()
