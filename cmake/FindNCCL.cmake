# FindNCCL: NVIDIA's collective communication library, which carries the gradient all-reduce
# between GPUs (engine/communicator_nccl_cuda.cpp). Only a run on several GPUs needs it.
# Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION and the target NCCL::NCCL.
#
# Looked for in NCCL_ROOT (CMake's <Package>_ROOT), beside the CUDA toolkit (find_package
# (CUDAToolkit) runs first), in the system's paths (NVIDIA's libnccl-dev package), and last in
# NVIDIA's NCCL wheel (nvidia-nccl-cu13, or -cu12) of the python3 on the PATH (<site-packages>/
# nvidia/nccl/{include,lib}; scripts/setup.sh installs it where NCCL is found nowhere else). The
# wheel has only libnccl.so.2, no libnccl.so development link: hence the second library name.
# -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON hides NCCL (test/engine/nccl_optional_test.sh).

# Asking python3 where the wheel is costs a start of the interpreter: only while not yet found.
set(_nccl_wheel "")
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  find_program(NCCL_PYTHON3 python3)
  if(NCCL_PYTHON3)
    execute_process(
      COMMAND ${NCCL_PYTHON3} -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE _nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()

# HINTS come before the system's paths, PATHS after them. The header is looked for beside the
# library first, so that the two come from the same NCCL.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_TARGET_DIR}/lib
  PATHS ${_nccl_wheel}/lib)
set(_nccl_beside "")
if(NCCL_LIBRARY)
  get_filename_component(_nccl_beside ${NCCL_LIBRARY} DIRECTORY)
  set(_nccl_beside ${_nccl_beside}/../include)
endif()
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_beside} ${CUDAToolkit_INCLUDE_DIRS}
  PATHS ${_nccl_wheel}/include)

if(NCCL_INCLUDE_DIR AND EXISTS ${NCCL_INCLUDE_DIR}/nccl.h)
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_defines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  set(NCCL_VERSION "")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _ "${_nccl_defines}")
    list(APPEND NCCL_VERSION ${CMAKE_MATCH_1})
  endforeach()
  list(JOIN NCCL_VERSION "." NCCL_VERSION)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY NCCL_PYTHON3)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
