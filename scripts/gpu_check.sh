#!/usr/bin/env bash
# The one script to run on a machine with a GPU: it answers "what is broken and how fast is it".
#
# Usage: scripts/gpu_check.sh [--build] [--tests] [--bench] [--e2e] [--summary]
# Phases (no flag: --build --tests --bench, in that order; each is sized to finish in under
# 9 minutes on one H100, so each may run as its own command):
#   --build    configures the cuda-release preset for this GPU's architecture only and builds the
#              GPU test executables and the benchmarks (nothing else); a build cut off by its
#              time limit resumes where it stopped when --build runs again
#   --tests    ctest -L gpu; a failed, timed-out or skipped GPU test makes the script exit 1
#              (on a GPU machine a skip means CUDA could not use the GPU)
#   --bench    every build/cuda-release/bench/*_bench, then bench/attention_sdpa_baseline.py
#              (PyTorch SDPA, cuDNN and flash backends) when PyTorch with CUDA is installed; the
#              phase stops starting benchmarks when its time budget (BENCH_BUDGET_S, 510 s) is
#              spent and lists the rest as not run
#   --e2e      the long end-to-end benchmarks bench/*_bench.sh (not part of the default run)
#   --summary  only rebuilds the summary from what $OUT already holds
# Every phase writes its logs to $OUT (default ./gpu_check_out); the end of every run prints one
# summary table of everything in $OUT (test or benchmark, result, our figure, the baseline, and
# the ratio baseline / ours: above 1 means ours is faster) and writes it to $OUT/summary.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_check_out}
BUILD=build/cuda-release
BENCH_BUDGET_S=${BENCH_BUDGET_S:-510}
mkdir -p "$OUT"

phases=()
for arg in "$@"; do
  case $arg in
    --build | --tests | --bench | --e2e | --summary) phases+=("${arg#--}") ;;
    *)
      echo "gpu_check.sh: unknown argument '$arg' (use --build, --tests, --bench, --e2e, --summary)" >&2
      exit 2
      ;;
  esac
done
[[ ${#phases[@]} -eq 0 ]] && phases=(build tests bench)

have_gpu() {
  nvidia-smi -L >"$OUT/nvidia-smi.txt" 2>&1 && nvidia-smi >>"$OUT/nvidia-smi.txt" 2>&1
}

# record STEP RC SECONDS: one line of $OUT/steps.tsv (the latest line of a step wins).
record() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT/steps.tsv"
}

# step NAME TIMEOUT COMMAND...: runs with a time limit, logs to $OUT/NAME.log, records the result.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  record "$name" "$rc" $((SECONDS - start))
  return $rc
}

phase_build() {
  local archs=""
  if have_gpu; then
    local cc
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
    [[ -n $cc ]] && archs="-DCMAKE_CUDA_ARCHITECTURES=${cc}-real"
  fi
  step configure 300 cmake --preset cuda-release $archs || {
    tail -30 "$OUT/configure.log"
    return 1
  }
  local targets
  targets=$(ctest --test-dir "$BUILD" -L gpu -N | sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\).*/\1/p')
  for source in bench/*_bench.cu; do targets+=" $(basename "$source" .cu)"; done
  # shellcheck disable=SC2086
  step build 530 cmake --build --preset cuda-release -j "$(nproc)" --target $targets || {
    tail -40 "$OUT/build.log"
    return 1
  }
}

phase_tests() {
  have_gpu || {
    echo "gpu_check.sh --tests: no GPU: nvidia-smi failed ($(head -1 "$OUT/nvidia-smi.txt"))" >&2
    return 1
  }
  # A test that cannot use the GPU fails (with CUDA's error) instead of skipping.
  export ELECTRA_EXPECT_GPU=1
  step ctest_gpu 530 ctest --test-dir "$BUILD" -L gpu --output-on-failure \
    --timeout 300 -j 1
  local rc=$?
  # One line per test: name, result, seconds, and for a skip the reason the executable gives.
  : >"$OUT/tests.tsv"
  sed -n 's/^.*Test *#[0-9]*: *\([^ ]*\) \.*[ *]*\([A-Za-z]*\)[^0-9]*\([0-9.]*\) sec.*$/\1\t\2\t\3/p' \
    "$OUT/ctest_gpu.log" | while IFS=$'\t' read -r name result secs; do
    local detail=""
    if [[ $result != Passed ]]; then
      detail=$(timeout 60 "$BUILD"/test/*/"$name" 2>&1 | grep -m1 -E "skipped|FAILED|error" || true)
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$result" "$secs" "$detail" >>"$OUT/tests.tsv"
  done
  [[ -s $OUT/tests.tsv ]] || {
    echo "gpu_check.sh --tests: ctest ran no GPU test (see $OUT/ctest_gpu.log)" >&2
    return 1
  }
  if grep -qv $'\tPassed\t' "$OUT/tests.tsv"; then
    echo "gpu_check.sh --tests: GPU tests failed or were skipped:" >&2
    grep -v $'\tPassed\t' "$OUT/tests.tsv" >&2
    return 1
  fi
  return $rc
}

phase_bench() {
  have_gpu || {
    echo "gpu_check.sh --bench: no GPU: nvidia-smi failed ($(head -1 "$OUT/nvidia-smi.txt"))" >&2
    return 1
  }
  local start=$SECONDS rc=0 left name
  local runs=()
  for bench in "$BUILD"/bench/*_bench; do [[ -x $bench ]] && runs+=("$bench"); done
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    runs+=(bench/attention_sdpa_baseline.py)
  else
    record attention_sdpa_baseline "not run: PyTorch with CUDA is not installed" 0
  fi
  for run in "${runs[@]}"; do
    name=$(basename "$run" .py)
    left=$((BENCH_BUDGET_S - (SECONDS - start)))
    if ((left < 20)); then
      record "$name" "not run: bench phase budget of ${BENCH_BUDGET_S} s spent" 0
      continue
    fi
    if [[ $run == *.py ]]; then
      step "$name" "$left" python3 "$run" || rc=1
    else
      step "$name" "$((left < 300 ? left : 300))" "$run" || rc=1
    fi
  done
  return $rc
}

phase_e2e() {
  have_gpu || {
    echo "gpu_check.sh --e2e: no GPU" >&2
    return 1
  }
  local rc=0
  for script in bench/*_bench.sh; do
    step "$(basename "$script" .sh)" 3600 bash "$script" || rc=1
  done
  return $rc
}

# The summary table from $OUT: steps.tsv, tests.tsv and the RESULT / SKIPPED lines of the logs.
summarize() {
  python3 - "$OUT" <<'PY'
import collections, glob, os, re, subprocess, sys

out = sys.argv[1]

def lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []

def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"

steps = {}
for line in lines(os.path.join(out, "steps.tsv")):
    name, rc, secs = (line.split("\t") + ["", ""])[:3]
    steps[name] = (rc, secs)

def result_of(rc):
    if rc == "0":
        return "ok"
    if rc in ("124", "137"):
        return "TIMEOUT"
    return rc if rc.startswith("not run") else f"FAILED (exit {rc})"

rows = []  # (what, result, ours, baseline, ratio)
for name in ("configure", "build"):
    if name in steps:
        rows.append((f"step: {name}", result_of(steps[name][0]), f"{steps[name][1]} s", "", ""))
for line in lines(os.path.join(out, "tests.tsv")):
    name, result, secs, detail = (line.split("\t") + ["", "", ""])[:4]
    shown = "passed" if result == "Passed" else f"{result.upper()} {detail}".strip()
    rows.append((f"test: {name}", shown, f"{secs} s", "", ""))

pattern = re.compile(r"^RESULT op=(\S+) shape=(\S+) impl=(\S+) ms=(\S+) gbps=(\S+) "
                     r"tflops=(\S+) roofline_pct=(\S+)$")
results = collections.OrderedDict()  # (op, shape) -> {impl: (ms, pct, log)}
others, skipped = [], []
for log in sorted(glob.glob(os.path.join(out, "*.log"))):
    bench = os.path.basename(log)[:-4]
    for line in lines(log):
        m = pattern.match(line)
        if m:
            op, shape, impl, ms, _, _, pct = m.groups()
            results.setdefault((op, shape), {})[impl] = (float(ms), pct, bench)
        elif line.startswith("SKIPPED "):
            skipped.append(line)
        elif line.startswith("RESULT "):
            others.append(f"{bench}: {line}")

benches = sorted({b for impls in results.values() for (_, _, b) in impls.values()} |
                 {n for n in steps if n not in ("configure", "build", "ctest_gpu")})
for bench in benches:
    if bench in steps:
        rows.append((f"bench: {bench}", result_of(steps[bench][0]), f"{steps[bench][1]} s", "",
                     ""))
for (op, shape), impls in results.items():
    ours = impls.get("ours")
    for impl, (ms, pct, _) in impls.items():
        if impl == "ours":
            continue
        ours_s = f"{ours[0]:.4g} ms ({ours[1]}% roofline)" if ours else "-"
        ratio = f"{ms / ours[0]:.2f}x" if ours and ours[0] > 0 else "-"
        rows.append((f"{op} {shape} vs {impl}", "measured", ours_s, f"{ms:.4g} ms", ratio))
    if ours and len(impls) == 1:
        rows.append((f"{op} {shape}", "measured", f"{ours[0]:.4g} ms ({ours[1]}% roofline)",
                     "-", "-"))

gpu = (lines(os.path.join(out, "nvidia-smi.txt")) or ["unknown"])[0]
text = [f"# gpu_check summary", "", f"- GPU: {gpu}", f"- commit: {git('rev-parse', '--short', 'HEAD')}",
        "- ratio = baseline ms / our ms (above 1: ours is faster); ms are medians, L2 flushed", "",
        "| test or benchmark | result | ours | baseline | ratio |", "| --- | --- | --- | --- | --- |"]
text += [f"| {' | '.join(r)} |" for r in rows]
if skipped:
    text += ["", "Baselines that did not run:", ""] + [f"- {s}" for s in skipped]
if others:
    text += ["", "Other results:", "", "```"] + others + ["```"]
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(text) + "\n")
print("\n".join(text))
PY
}

status=0
for phase in "${phases[@]}"; do
  case $phase in
    build) phase_build || status=1 ;;
    tests) phase_tests || status=1 ;;
    bench) phase_bench || status=1 ;;
    e2e) phase_e2e || status=1 ;;
    summary) ;;
  esac
done
summarize
exit $status
