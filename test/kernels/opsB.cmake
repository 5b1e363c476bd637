# opsB: matmul (op 10) and attention (op 5).
electra_test(opsB_unit_tests LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/matmul_unit_test.cpp ${CMAKE_CURRENT_LIST_DIR}/attention_unit_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/attention_flash_layout_test.cpp
  DEPS electra_kernels)
electra_test(opsB_gradcheck_tests LABEL gradcheck
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/matmul_gradcheck_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/attention_gradcheck_test.cpp
  DEPS electra_kernels)
electra_test(opsB_gpu_tests GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/matmul_gpu_test.cpp ${CMAKE_CURRENT_LIST_DIR}/attention_gpu_test.cpp
  DEPS electra_kernels)
