// The fused FFN block forward (kernels/ffn_forward.h) on ELECTRA-Small's generator (16384 rows,
// H = 64, F = 256): the cases of test/kernels/ffn_forward_cases.cpp run by bench/op_bench.cuh,
// ours against the unfused sequence it replaces (cuBLASLt GEMM, bias-GELU, GEMM with its bias
// epilogue, residual LayerNorm: 4 launches), the cases' baseline_case. No naive baselines of its
// own: the unfused ops are each benchmarked against theirs.
#include "kernels/ffn_forward.h"
#include "op_bench.cuh"

int main() {
  return electra::bench::run_op_benchmarks(electra::test::op_cases(), {});
}
