# zero_size: ops called with an empty batch return before any work (CPU) or launch (GPU).
electra_test(zero_size_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/zero_size_test.cpp
  DEPS electra_kernels)
electra_test(zero_size_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/zero_size_gpu_test.cpp
  DEPS electra_kernels)
