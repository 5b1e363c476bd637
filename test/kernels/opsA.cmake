# opsA: embedding, layernorm (+ fused residual/dropout), bias + GELU, dropout, gather.
set(_opsA_dir ${CMAKE_CURRENT_LIST_DIR})
electra_test(opsA_gradcheck_tests LABEL gradcheck DEPS electra_kernels SOURCES
  ${_opsA_dir}/dropout_gradcheck_test.cpp
  ${_opsA_dir}/embedding_gradcheck_test.cpp
  ${_opsA_dir}/gather_gradcheck_test.cpp
  ${_opsA_dir}/gelu_gradcheck_test.cpp
  ${_opsA_dir}/layernorm_gradcheck_test.cpp)
electra_test(opsA_unit_tests LABEL unit DEPS electra_kernels SOURCES
  ${_opsA_dir}/dropout_test.cpp
  ${_opsA_dir}/embedding_test.cpp
  ${_opsA_dir}/gather_test.cpp
  ${_opsA_dir}/gelu_test.cpp
  ${_opsA_dir}/layernorm_test.cpp)
electra_test(opsA_gpu_tests GPU DEPS electra_kernels SOURCES
  ${_opsA_dir}/dropout_gpu_test.cpp
  ${_opsA_dir}/embedding_gpu_test.cpp
  ${_opsA_dir}/gather_gpu_test.cpp
  ${_opsA_dir}/gelu_gpu_test.cpp
  ${_opsA_dir}/layernorm_gpu_test.cpp)
