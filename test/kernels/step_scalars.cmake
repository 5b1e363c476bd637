electra_test(step_scalars_tests LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/step_scalars_test.cpp
  DEPS electra_kernels)
