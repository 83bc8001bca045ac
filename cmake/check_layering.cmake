# Checks the layering of docs/architecture.md: a source may include headers of its own stage and
# of the stages below it, never above. Run at configure time (a violation stops cmake) and as the
# ctest `layering` (tests/CMakeLists.txt), so a forbidden #include fails the build and the suite.
#   cmake -DSOURCE_DIR=/path/to/dtsim -DGRAPH=build/layering_graph.cmake -P cmake/check_layering.cmake
#
# The rule comes from the link graph: GRAPH names the file cmake/layering_graph.cmake writes at
# configure time (build/layering_graph.cmake), which sets _allowed_<stage> for every stage.
if(NOT GRAPH OR NOT EXISTS "${GRAPH}")
  message(FATAL_ERROR "check_layering: pass -DGRAPH=<build>/layering_graph.cmake (written when "
                      "CMake configures the build)")
endif()
include("${GRAPH}")
set(stages ${DTSIM_STAGES})
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layering: pass -DSOURCE_DIR=<repository root>")
endif()
# A relative SOURCE_DIR is taken from the current directory (GLOB RELATIVE needs an absolute one).
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

set(violations "")
foreach(stage IN LISTS stages)
  set(allowed ${_allowed_${stage}})
  string(REPLACE ";" "|" allowed_regex "${allowed}")
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${stage}/*.h"
       "${SOURCE_DIR}/${stage}/*.cc")
  foreach(source IN LISTS sources)
    file(STRINGS "${SOURCE_DIR}/${source}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
      # Our headers are named from the repository root; anything else is a third-party header.
      if(NOT header MATCHES "^(core|models|sim|driver|cli|real|gui)/")
        continue()
      endif()
      if(NOT header MATCHES "^(${allowed_regex})/")
        string(APPEND violations "\n  ${source} includes ${header}: stage ${stage} links only ${allowed}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "layering violations (docs/architecture.md, \"Layering\"):${violations}")
endif()
message(STATUS "layering: every #include is allowed by the link graph")
