# Checks the layering of docs/architecture.md: a source may include headers of its own stage and
# of the stages below it, never above. Run at configure time (a violation stops cmake) and as the
# ctest `layering` (tests/CMakeLists.txt), so a forbidden #include fails the build and the suite.
#   cmake -DSOURCE_DIR=/path/to/dtsim -P cmake/check_layering.cmake
#
# Each stage lists the stages it may include, itself included. Stages are path prefixes.
set(_base core/base)
set(_hardware ${_base} core/hardware)
set(_reliability ${_base} core/reliability)
set(_scenario ${_hardware} core/reliability core/scenario)
set(_ir ${_scenario} core/ir)
set(_strategy ${_ir} core/strategy)
set(_collectives ${_ir} core/collectives)
set(_exec ${_strategy} core/collectives core/exec)
set(_report ${_exec} core/reliability core/report)
set(_models ${_ir} models)
set(_sim ${_exec} sim)
set(_real ${_exec} real)
set(_driver ${_report} models sim real driver)
# gui/plot draws from the driver's analyses; the CLI's analyze verb draws with it.
set(_plot ${_driver} gui/plot)
# gui/views, the GUI's data views, draw with gui/plot and read the driver's results.
set(_views ${_driver} gui/plot gui/views)
set(_cli ${_driver} gui/plot cli)
# The desktop application sits beside the CLI: the driver, the plotting module and the views.
set(_app ${_driver} gui/plot gui/views gui/app)

set(stages core/base core/reliability core/hardware core/scenario core/ir core/strategy core/collectives core/exec
  core/report models sim real driver gui/plot gui/views gui/app cli)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layering: pass -DSOURCE_DIR=<repository root>")
endif()
# A relative SOURCE_DIR is taken from the current directory (GLOB RELATIVE needs an absolute one).
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

set(violations "")
foreach(stage IN LISTS stages)
  get_filename_component(name "${stage}" NAME)
  set(allowed ${_${name}})
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
        string(APPEND violations "\n  ${source} includes ${header}: stage ${stage} may include only ${allowed}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "layering violations (docs/architecture.md, \"Layering\"):${violations}")
endif()
message(STATUS "layering: every #include respects the stage order")
