# FindSimGrid: Debian's libsimgrid-dev ships no CMake package, so find it through
# pkg-config (simgrid.pc) or by its header and library, and create SimGrid::SimGrid.
#
# Result variables: SimGrid_FOUND, SimGrid_VERSION, SimGrid_INCLUDE_DIR, SimGrid_LIBRARY.

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_SimGrid QUIET simgrid)
endif()

find_path(SimGrid_INCLUDE_DIR NAMES simgrid/s4u.hpp HINTS ${PC_SimGrid_INCLUDE_DIRS})
find_library(SimGrid_LIBRARY NAMES simgrid HINTS ${PC_SimGrid_LIBRARY_DIRS})

if(PC_SimGrid_VERSION)
  set(SimGrid_VERSION ${PC_SimGrid_VERSION})
elseif(SimGrid_INCLUDE_DIR AND EXISTS "${SimGrid_INCLUDE_DIR}/simgrid/version.h")
  file(STRINGS "${SimGrid_INCLUDE_DIR}/simgrid/version.h" _sg_major REGEX "#define SIMGRID_VERSION_MAJOR")
  file(STRINGS "${SimGrid_INCLUDE_DIR}/simgrid/version.h" _sg_minor REGEX "#define SIMGRID_VERSION_MINOR")
  string(REGEX MATCH "[0-9]+" _sg_major "${_sg_major}")
  string(REGEX MATCH "[0-9]+" _sg_minor "${_sg_minor}")
  set(SimGrid_VERSION "${_sg_major}.${_sg_minor}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SimGrid
  REQUIRED_VARS SimGrid_LIBRARY SimGrid_INCLUDE_DIR
  VERSION_VAR SimGrid_VERSION)

if(SimGrid_FOUND AND NOT TARGET SimGrid::SimGrid)
  add_library(SimGrid::SimGrid UNKNOWN IMPORTED)
  set_target_properties(SimGrid::SimGrid PROPERTIES
    IMPORTED_LOCATION "${SimGrid_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SimGrid_INCLUDE_DIR}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${SimGrid_INCLUDE_DIR}")
endif()
mark_as_advanced(SimGrid_INCLUDE_DIR SimGrid_LIBRARY)
