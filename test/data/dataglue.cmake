# GLUE and SQuAD readers, SQuAD featurisation and answer extraction, evaluation metrics.
electra_test(glue_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/glue_reader_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/glue_metrics_test.cpp
  DEPS electra_data)
electra_test(glue_shared_data_tests SHARED LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/glue_shared_data_test.cpp
  DEPS electra_data)
electra_test(squad_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/squad_reader_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/squad_pipeline_test.cpp
  DEPS electra_data)
electra_test(metrics_tests LABEL unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics_squad_test.cpp
  DEPS electra_data)
