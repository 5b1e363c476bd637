# datatok: tokenizer, vocabulary (loading and training), pre-training data builder, shards.
electra_test(datatok_tests LABEL unit DEPS electra_data
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_test.cpp ${CMAKE_CURRENT_LIST_DIR}/vocab_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/shard_test.cpp ${CMAKE_CURRENT_LIST_DIR}/builder_test.cpp)
# Parity with HF BertTokenizer; needs the shared vocabulary and corpus.
electra_test(datatok_fixture_tests LABEL fixture SHARED DEPS electra_data
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_fixture_test.cpp)
# The real binary: build-vocab, build-data, info on a small corpus; bad arguments exit 2.
add_test(NAME datatok_cli_e2e
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/datatok_cli_e2e.sh $<TARGET_FILE:electra>)
set_tests_properties(datatok_cli_e2e PROPERTIES LABELS e2e)
# Parity with HF BertTokenizer on the committed small vocabulary: always runs.
electra_test(datatok_small_vocab_fixture_tests LABEL fixture DEPS electra_data
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_small_vocab_test.cpp)
