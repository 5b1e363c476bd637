# The SIMT emulator (docs/ARCHITECTURE.md, "The SIMT emulator"). Every CUDA build has its library,
# electra_simt, whose own test (test/simt/simt_test.cpp) runs in the cuda preset too. The simt
# preset (ELECTRA_SIMT=ON) also rewrites every CUDA source with test/simt/rewrite.py into C++
# under build/<preset>/simt/, compiles it with the host compiler and simt_device.h in front, and
# links electra_simt instead of libcudart and libcublasLt. The rewriting runs when CMake
# configures, and again whenever a CUDA source changes (CMAKE_CONFIGURE_DEPENDS); rewrite.py
# leaves an unchanged output's time stamp alone.
add_library(electra_simt STATIC
  ${PROJECT_SOURCE_DIR}/test/simt/simt_scheduler.cpp
  ${PROJECT_SOURCE_DIR}/test/simt/cuda_runtime_host.cpp
  ${PROJECT_SOURCE_DIR}/test/simt/cublas_host.cpp)
target_include_directories(electra_simt PUBLIC ${PROJECT_SOURCE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(electra_simt PRIVATE -Wall -Wextra)
# Under ThreadSanitizer (the simt-tsan preset) the scheduler is not instrumented: its own
# bookkeeping, which every fiber touches, is no data race of the kernels'; SIMT_TSAN makes it
# tell ThreadSanitizer about the fibers and CUDA's happens-before edges instead.
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  set_source_files_properties(${PROJECT_SOURCE_DIR}/test/simt/simt_scheduler.cpp PROPERTIES
    COMPILE_OPTIONS "-fno-sanitize=thread" COMPILE_DEFINITIONS SIMT_TSAN)
endif()
if(NOT ELECTRA_SIMT)
  return()
endif()

find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(ELECTRA_SIMT_DIR ${CMAKE_BINARY_DIR}/simt)
set(_simt_rewrite ${PROJECT_SOURCE_DIR}/test/simt/rewrite.py)

# The rewritten copy of `source` (absolute) at `output`.
function(electra_simt_rewrite source output)
  execute_process(COMMAND ${Python3_EXECUTABLE} ${_simt_rewrite} ${source} ${output}
    RESULT_VARIABLE _status)
  if(NOT _status EQUAL 0)
    message(FATAL_ERROR "test/simt/rewrite.py failed on ${source}")
  endif()
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
endfunction()

# The device headers: the rewritten ones shadow the originals through -iquote.
file(GLOB _simt_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*.cuh)
foreach(_header ${_simt_headers})
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_header})
  electra_simt_rewrite(${_header} ${ELECTRA_SIMT_DIR}/${_rel})
endforeach()
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${_simt_rewrite})

# electra_simt_sources(OUT sources...): OUT is `sources` with every .cu replaced by its rewritten
# C++ (a relative path is relative to the calling directory).
function(electra_simt_sources out)
  set(_result)
  foreach(_source ${ARGN})
    if(NOT _source MATCHES "\\.cu$")
      list(APPEND _result ${_source})
      continue()
    endif()
    get_filename_component(_abs ${_source} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_abs})
    set(_cpp ${ELECTRA_SIMT_DIR}/${_rel}.cpp)
    electra_simt_rewrite(${_abs} ${_cpp})
    # -fno-strict-aliasing: the kernels reinterpret 16-byte packs (cuda_common.cuh's load_pack),
    # which nvcc allows and g++'s aliasing rules do not.
    set_source_files_properties(${_cpp} PROPERTIES COMPILE_OPTIONS
      "-iquote;${ELECTRA_SIMT_DIR};-include;${PROJECT_SOURCE_DIR}/test/simt/simt_device.h;-Wno-unknown-pragmas;-fno-strict-aliasing")
    list(APPEND _result ${_cpp})
  endforeach()
  set(${out} ${_result} PARENT_SCOPE)
endfunction()

