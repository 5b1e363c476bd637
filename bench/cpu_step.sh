#!/usr/bin/env bash
# Our CPU pre-training update against the same model in PyTorch (HF transformers, eager), one
# thread each, in the same run: electra-tiny and ELECTRA-Small, batch 8, seq 128.
# Usage: bench/cpu_step.sh [BUILD_DIR (default build/cpu)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/cpu}"
cmake --build "$build" --target train_step >/dev/null
lscpu | grep -E "^Model name" || true
for model in tiny small; do
  "$build/bench/train_step" --model "$model" --batch 8 --seq-len 128
  OMP_NUM_THREADS=1 python3 "$root/bench/step_pytorch.py" --model "$model" --batch 8 \
    --seq-len 128 --threads 1
done
