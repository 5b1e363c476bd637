electra_test(cast_tests LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/cast_test.cpp DEPS electra_kernels)
electra_test(cast_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/cast_gpu_test.cpp DEPS electra_kernels)
