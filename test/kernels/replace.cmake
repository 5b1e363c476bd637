# replace: the discriminator's input and labels from the generator's samples.
electra_test(replace_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/replace_tokens_test.cpp
  DEPS electra_kernels)
electra_test(replace_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/replace_tokens_gpu_test.cpp
  DEPS electra_kernels)
# unigram: replacements from the training data's unigram distribution (generator: unigram).
electra_test(unigram_unit_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/unigram_sample_test.cpp
  DEPS electra_kernels)
electra_test(unigram_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/unigram_sample_gpu_test.cpp
  DEPS electra_kernels)
