# mse: the squared-error loss of the regression head (STS-B).
electra_test(mse_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/mse_loss_test.cpp
  DEPS electra_kernels)
electra_test(mse_gradcheck_tests LABEL gradcheck SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/mse_loss_gradcheck_test.cpp
  DEPS electra_kernels)
electra_test(mse_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/mse_loss_gpu_test.cpp
  DEPS electra_kernels)
