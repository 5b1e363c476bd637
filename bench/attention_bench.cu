// attention, bf16, dropout 0.1 and 0, at T = 128 and 512 with the head counts of ELECTRA-Small (4),
// Base (12) and Large (16), 16384 tokens per call: the cases of test/kernels/attention_cases.cpp
// run by bench/op_bench.cuh. At each shape two or three cases, under the same shape name:
//   op attention_fwd / attention_bwd: ours is version 2 (the flash kernels), version 1 (cuBLASLt
//     GEMMs around the fused softmax kernels) the baseline "baseline_v1_unfused";
//   op attention_flash_ds_fwd / attention_flash_ds_bwd: ours is kFlashDsGemm (flash's forward;
//     backward flash's dK, dV blocks writing dS, then dQ = dS K / sqrt(d) by cuBLASLt), the current
//     flash the baseline "baseline_flash_recompute" (its forward rows time the same flash forward
//     twice);
//   at T = 128 only, op attention_flash_short_fwd / attention_flash_short_bwd: ours is kFlashShort
//     (one block per (b, head) each way, kernels/attention_flash_short.cu: a forward over all 128
//     keys at once without online rescaling, a backward computing S and dPd once), the current
//     flash the baseline "baseline_flash_recompute" (at T = 512 kFlashShort runs flash's kernels,
//     so it has no rows there);
// so each shape's backward has flash (timed two or three times), version 1, kFlashDsGemm and, at
// T = 128, kFlashShort from one run. Every
// implementation is validated against the CPU reference at batch 2 before anything is timed.
// FLOPs are the useful math of every version (4 B h T^2 d forward, 8 B h T^2 d backward; flash
// recomputes S and dPd on top of that), against the bf16 GEMM rate; bytes are flash's traffic for
// every row. PyTorch's fused attention (SDPA with its cuDNN and flash backends) is measured by
// bench/attention_sdpa_baseline.py at the same shapes under the op attention_fwd / _bwd names, in
// the same scripts/gpu_check.sh run; it is the speed reference that matters.
#include "op_bench.cuh"

using namespace electra;

int main() {
  return bench::run_op_benchmarks(test::op_cases(), {});
}
