// The fused FFN block backward (kernels/ffn_backward.h) on ELECTRA-Small's generator (16384 rows,
// H = 64, F = 256): the cases of test/kernels/ffn_backward_cases.cpp run by bench/op_bench.cuh,
// ours against the unfused sequence it replaces (residual LayerNorm backward, cuBLASLt dX GEMM,
// bias-GELU backward, accumulating cuBLASLt dX GEMM: 4 launches), the cases' baseline_case. No
// naive baselines of its own: the unfused ops are each benchmarked against theirs.
#include "kernels/ffn_backward.h"
#include "op_bench.cuh"

int main() {
  return electra::bench::run_op_benchmarks(electra::test::op_cases(), {});
}
