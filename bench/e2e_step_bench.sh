#!/usr/bin/env bash
# The end-to-end GPU benchmark from a build tree (the `step` phase of scripts/gpu_check.sh runs the
# same from the GPU bundle): our bf16 pre-training
# update for ELECTRA-Small (seq 128, batch 128) and ELECTRA-Base (seq 128 and 512) against HF
# transformers (generator + discriminator with shared embeddings, masking and sampling in
# PyTorch, AdamW, bf16 autocast), eager and torch.compile, in the same run; 50 timed updates
# after warm-up, medians. MFU = the paper's FLOPs over the bf16 GEMM rate that
# build/.../bench/matmul_bench measures in the same run.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAIN_STEP:-$root/build/cuda-release/bench/train_step}"
run() {  # run MODEL SEQ BATCH
  "$bin" --model "$1" --device cuda --precision bf16 --seq-len "$2" --batch "$3" --warmup 5 \
    --repeats 50
  for extra in "" "--compile"; do
    timeout 900 python3 "$root/bench/step_pytorch.py" --model "$1" --device cuda --bf16 $extra \
      --seq-len "$2" --batch "$3" --warmup 5 --repeats 50 2>&1 | grep RESULT ||
      echo "RESULT impl=pytorch$extra model=$1 seq=$2 FAILED"
  done
}
run small 128 128
run base 128 128
run base 512 32
