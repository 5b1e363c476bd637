#!/usr/bin/env bash
# The one script to run on a machine with a GPU: builds the cuda-release preset, runs the GPU tests
# (ctest -L gpu), then every benchmark in bench/, and writes logs plus a summary table to $OUT
# (default ./gpu_check_out/). Without a GPU it says so and exits non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
JOBS=$(nproc)
summary=$OUT/summary.md

if ! nvidia-smi -L >"$OUT/nvidia-smi.txt" 2>&1; then
  echo "gpu_check.sh: no GPU: nvidia-smi failed ($(head -1 "$OUT/nvidia-smi.txt"))" >&2
  exit 1
fi
nvidia-smi >>"$OUT/nvidia-smi.txt" 2>&1
gpu=$(head -1 "$OUT/nvidia-smi.txt")

{
  echo "# gpu_check $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "- GPU: $gpu"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1 || /usr/local/cuda/bin/nvcc --version | tail -1)"
  echo
} >"$summary"

step() {  # step NAME COMMAND...: runs, logs to $OUT/NAME.log, records pass/fail and duration
  local name=$1
  shift
  local start=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "| $name | $([[ $rc -eq 0 ]] && echo ok || echo "FAILED ($rc)") | $((SECONDS - start)) s |" \
    >>"$OUT/steps.md"
  return $rc
}

: >"$OUT/steps.md"
step configure cmake --preset cuda-release || { cat "$OUT/configure.log"; exit 1; }
step build cmake --build --preset cuda-release -j "$JOBS" || { tail -50 "$OUT/build.log"; exit 1; }
step ctest_gpu ctest --preset cuda-release -L gpu --output-on-failure -j 1
gpu_tests_rc=$?

for bench in build/cuda-release/bench/*_bench; do
  [[ -x $bench ]] || continue
  step "$(basename "$bench")" timeout 600 "$bench"
done
for script in bench/*_bench.sh; do
  [[ -f $script ]] || continue
  step "$(basename "$script" .sh)" timeout 900 bash "$script"
done

{
  echo "## steps"
  echo
  echo "| step | result | time |"
  echo "| --- | --- | --- |"
  cat "$OUT/steps.md"
  echo
  echo "## GPU tests"
  echo
  echo '```'
  grep -E "tests passed|Test #|\*\*\*" "$OUT/ctest_gpu.log" | tail -40
  echo '```'
  echo
  echo "## benchmarks (median ms, L2 flushed; roofline = measured copy bandwidth or bf16 GEMM rate)"
  echo
  echo "| op | shape | impl | ms | GB/s | TFLOP/s | % roofline |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  cat "$OUT"/*.log | sed -n 's/^RESULT op=\([^ ]*\) shape=\([^ ]*\) impl=\([^ ]*\) ms=\([^ ]*\) gbps=\([^ ]*\) tflops=\([^ ]*\) roofline_pct=\([^ ]*\)$/| \1 | \2 | \3 | \4 | \5 | \6 | \7 |/p'
} >>"$summary"
cat "$summary"
exit $gpu_tests_rc
