#!/usr/bin/env bash
# scripts/gpu_check.sh --summary on made-up logs: one table with the steps, every GPU test (a skip
# shown as such), each benchmark pair with its ratio baseline / ours, and the baselines that did
# not run; and --tests without a GPU fails instead of passing.
set -uo pipefail
script=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "FAILED: $*"
  echo "--- summary.md:"
  cat "$out/summary.md" 2>/dev/null
  exit 1
}

echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-test)" >"$out/nvidia-smi.txt"
printf 'configure\t0\t12\nbuild\t0\t250\nattention_bench\t0\t80\nmatmul_bench\t124\t300\n' \
  >"$out/steps.tsv"
printf 'attention_sdpa_baseline\tnot run: PyTorch with CUDA is not installed\t0\n' >>"$out/steps.tsv"
printf 'philox_gpu_test\tPassed\t2.31\t\nzero_size_gpu_test\tSkipped\t0.01\tskipped: no CUDA device present\n' \
  >"$out/tests.tsv"
cat >"$out/attention_bench.log" <<'LOG'
validate attention flash T=128 H=256 heads=4: max rel err 0.003
RESULT op=attention_fwd shape=small_B128_T128_H256_p0.1 impl=ours ms=0.5000 gbps=100.0 tflops=50.00 roofline_pct=7.1
RESULT op=attention_fwd shape=small_B128_T128_H256_p0.1 impl=baseline_v1_unfused ms=1.5000 gbps=30.0 tflops=16.67 roofline_pct=2.4
LOG
cat >"$out/attention_sdpa_baseline.log" <<'LOG'
RESULT op=attention_fwd shape=small_B128_T128_H256_p0.1 impl=baseline_sdpa_cudnn ms=0.2500 gbps=200.0 tflops=100.00 roofline_pct=14.2
SKIPPED op=attention shape=small_B128_T128_H256_p0.1 impl=baseline_sdpa_flash_nomask: No available kernel
LOG

OUT=$out bash "$script" --summary >"$out/stdout.txt" 2>&1 || fail "--summary exited non-zero"
cmp -s "$out/stdout.txt" "$out/summary.md" || fail "stdout and summary.md differ"
summary=$out/summary.md
grep -q "^| test or benchmark | result | ours | baseline | ratio |$" "$summary" || fail "no header"
grep -q "^| step: build | ok | 250 s |  |  |$" "$summary" || fail "build step row"
grep -q "^| test: philox_gpu_test | passed | 2.31 s |" "$summary" || fail "passed test row"
grep -q "^| test: zero_size_gpu_test | SKIPPED skipped: no CUDA device present |" "$summary" ||
  fail "skipped test row"
grep -q "^| bench: matmul_bench | TIMEOUT |" "$summary" || fail "timed-out bench row"
grep -q "^| bench: attention_sdpa_baseline | not run: PyTorch with CUDA is not installed |" \
  "$summary" || fail "not-run baseline row"
grep -q "^| attention_fwd small_B128_T128_H256_p0.1 vs baseline_v1_unfused | measured | 0.5 ms (7.1% roofline) | 1.5 ms | 3.00x |$" \
  "$summary" || fail "v1 ratio row"
grep -q "^| attention_fwd small_B128_T128_H256_p0.1 vs baseline_sdpa_cudnn | measured | 0.5 ms (7.1% roofline) | 0.25 ms | 0.50x |$" \
  "$summary" || fail "SDPA ratio row"
grep -q "^- SKIPPED op=attention shape=small_B128_T128_H256_p0.1 impl=baseline_sdpa_flash_nomask" \
  "$summary" || fail "skipped baseline line"

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  OUT=$out bash "$script" --tests >"$out/tests_stdout.txt" 2>&1 && fail "--tests passed without a GPU"
  grep -q "no GPU" "$out/tests_stdout.txt" || fail "--tests gave no reason: $(cat "$out/tests_stdout.txt")"
fi
echo "gpu_check summary: ok"
