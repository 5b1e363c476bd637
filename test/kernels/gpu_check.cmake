# scripts/gpu_check.sh: its summary table from made-up logs (runs without a GPU).
add_test(NAME gpu_check_summary COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_check_summary_test.sh
  ${PROJECT_SOURCE_DIR}/scripts/gpu_check.sh)
set_tests_properties(gpu_check_summary PROPERTIES LABELS unit)
