# opsC: softmax_xent, disc_head, masking, optimizer (grad norm, AdamW, LAMB).
electra_test(opsC_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/softmax_xent_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/disc_head_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/masking_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_test.cpp
  DEPS electra_kernels)
electra_test(opsC_gradcheck_tests LABEL gradcheck SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/softmax_xent_gradcheck_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/disc_head_gradcheck_test.cpp
  DEPS electra_kernels)
electra_test(opsC_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/softmax_xent_gpu_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/disc_head_gpu_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/masking_gpu_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_gpu_test.cpp
  DEPS electra_kernels)
