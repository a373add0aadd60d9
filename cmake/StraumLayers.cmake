# The layers, as the compiler sees them (SPEC.md §2).
#
# cmake/layers.txt names each layer's folder, the layers it stands on and
# their front doors. Every library and program of the product is built with
# one include directory of its own, build/layers/<layer>/, that holds:
#   - its own folder, whole (a link to the source folder), and
#   - the front-door headers of the layers it stands on, and nothing else.
# So `#include "store/internal.h"` from engine/ (not a front door),
# "ingest/ingest.h" from engine/ (sideways) or "serve/serve.h" from store/
# (upwards) does not compile. tools/check_layers.sh checks the same table
# over the source text, including what no compiler sees ("../" paths,
# headers not built in this configuration); the test command runs it
# (test_layers).
#
#   straum_layer(<target> <layer>)   gives <target> its layer's include dir
#
# Tests (tests/ but tests/kit) see the whole tree: they test internals.
include_guard(GLOBAL)

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${CMAKE_CURRENT_LIST_DIR}/layers.txt)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/layers.txt _straum_layer_lines REGEX "^[a-z]")
set(_straum_layers "")
foreach(line IN LISTS _straum_layer_lines)
  string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
  list(GET fields 0 name)
  list(GET fields 1 dir)
  list(GET fields 2 below)
  list(GET fields 3 doors)
  list(APPEND _straum_layers ${name})
  set(_straum_layer_dir_${name} ${dir})
  if(below STREQUAL "-")
    set(below "")
  endif()
  string(REPLACE "," ";" below "${below}")
  set(_straum_layer_below_${name} ${below})
  set(door_files "")
  if(NOT doors STREQUAL "-")
    string(REPLACE "," ";" doors "${doors}")
    foreach(pattern IN LISTS doors)
      file(GLOB matched RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
           ${PROJECT_SOURCE_DIR}/${pattern})
      list(APPEND door_files ${matched})
    endforeach()
  endif()
  set(_straum_layer_doors_${name} ${door_files})
endforeach()

# Writes build/layers/<layer>/ once per configure: links, not copies, so an
# edited header is seen at once.
function(_straum_layer_tree layer)
  get_property(done GLOBAL PROPERTY _straum_layer_tree_${layer})
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY _straum_layer_tree_${layer} TRUE)
  set(root ${PROJECT_BINARY_DIR}/layers/${layer})
  file(REMOVE_RECURSE ${root})
  set(own ${_straum_layer_dir_${layer}})
  get_filename_component(parent ${root}/${own} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${own} ${root}/${own} SYMBOLIC)
  foreach(below IN LISTS _straum_layer_below_${layer})
    foreach(door IN LISTS _straum_layer_doors_${below})
      get_filename_component(parent ${root}/${door} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${door} ${root}/${door} SYMBOLIC)
    endforeach()
  endforeach()
endfunction()

function(straum_layer target layer)
  if(NOT layer IN_LIST _straum_layers)
    message(FATAL_ERROR "straum_layer(${target}): unknown layer ${layer} (cmake/layers.txt)")
  endif()
  _straum_layer_tree(${layer})
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${layer})
endfunction()
