// attention, bf16, dropout 0.1 and 0, at T = 128 and 512 with the head counts of ELECTRA-Small (4),
// Base (12) and Large (16), 16384 tokens per call: the cases of test/kernels/attention_cases.cpp
// run by bench/op_bench.cuh. Ours is version 2 (the flash kernels); version 1 (cuBLASLt GEMMs
// around the fused softmax kernels) is the baseline ("baseline_v1_unfused", the case's
// baseline_case), both validated against the CPU reference at batch 2 before anything is timed.
// FLOPs are the useful math of both versions (4 B h T^2 d forward, 8 B h T^2 d backward; flash
// recomputes S and dPd on top of that), against the bf16 GEMM rate; bytes are flash's traffic for
// both rows. PyTorch's fused attention (SDPA with its cuDNN and flash backends) is measured by
// bench/attention_sdpa_baseline.py at the same shapes under the same RESULT names, in the same
// scripts/gpu_check.sh run; it is the speed reference that matters.
#include "op_bench.cuh"

using namespace electra;

int main() {
  return bench::run_op_benchmarks(test::op_cases(), {});
}
