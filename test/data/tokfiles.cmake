# Tokenizer files of a model directory (issue 18): tokenizer_config.json, tokenizer.json, casing.
electra_test(tokenizer_files_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_files_test.cpp DEPS electra_data)
