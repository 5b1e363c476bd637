// The fused attention output sublayer forward (kernels/output_layernorm.h) on ELECTRA-Small's
// generator (16384 rows, H = K = 64): the cases of test/kernels/output_layernorm_cases.cpp run by
// bench/op_bench.cuh, ours against the unfused sequence it replaces (cuBLASLt GEMM with its bias
// epilogue, residual LayerNorm: 2 launches), the cases' baseline_case. No naive baselines of its
// own: the unfused ops are each benchmarked against theirs.
#include "kernels/output_layernorm.h"
#include "op_bench.cuh"

int main() {
  return electra::bench::run_op_benchmarks(electra::test::op_cases(), {});
}
