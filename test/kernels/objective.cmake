# objective: the copy mechanism of the all-tokens-mlm objective.
electra_test(copy_mlm_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/copy_mlm_test.cpp
  DEPS electra_kernels)
electra_test(copy_mlm_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/copy_mlm_gpu_test.cpp
  DEPS electra_kernels)
