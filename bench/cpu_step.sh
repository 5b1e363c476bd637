#!/usr/bin/env bash
# Our CPU pre-training update against the same model in PyTorch (HF transformers: eager and
# torch.compile with inductor), at 1 thread and at all the cores this process may use, all in one
# run: electra-tiny and ELECTRA-Small, batch 8, seq 128, vocab 30522 (bench/train_step and
# bench/step_pytorch.py; median of 7 updates after 2 warm-up, the warm-up includes compiling).
# Prints the date, the CPU, the load average before and after (a loaded machine gives noisy
# figures: run it on a quiet one for bench/RESULTS.md), every RESULT line, then a table.
# Usage: bench/cpu_step.sh [BUILD_DIR (default build/cpu)]
#        (MODELS="tiny" bench/cpu_step.sh: only those models, for a quick check of the script)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/cpu}"
cmake --build "$build" --target train_step >/dev/null
all="$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')"
thread_counts="1"
[ "$all" -gt 1 ] && thread_counts="1 $all"
results="$(mktemp)"
trap 'rm -f "$results"' EXIT

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($all cores available to this process," \
  "$(nproc --all) online)"
echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
echo "command: ${MODELS:+MODELS=\"$MODELS\" }bench/cpu_step.sh $*"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in ${MODELS:-tiny small}; do
  for threads in $thread_counts; do
    "$build/bench/train_step" --model "$model" --batch 8 --seq-len 128 --threads "$threads" |
      tee -a "$results"
    for compile in "" --compile; do
      OMP_NUM_THREADS="$threads" python3 "$root/bench/step_pytorch.py" --model "$model" \
        --batch 8 --seq-len 128 --threads "$threads" $compile | tee -a "$results"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# One row per (model, threads): our median and each baseline's, and our speed-up over it.
python3 - "$results" <<'EOF'
import sys

rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("RESULT "):
        continue
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    rows.setdefault((f["model"], int(f["threads"])), {})[f["impl"]] = float(f["median_ms"])
print("\n| model | threads | ours (ms) | HF eager (ms) | speed-up | HF torch.compile (ms) | speed-up |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (model, threads), r in rows.items():
    ours, eager, comp = r.get("electra"), r.get("pytorch"), r.get("pytorch-compile")
    cell = lambda x: f"{x:.1f}" if x else "-"
    up = lambda base: f"{base / ours:.2f}x" if base and ours else "-"
    print(f"| {model} | {threads} | {cell(ours)} | {cell(eager)} | {up(eager)} | {cell(comp)} "
          f"| {up(comp)} |")
EOF
