#!/usr/bin/env bash
# The README's demo: pre-train ELECTRA-Tiny from scratch on a small corpus, on the GPU when one is
# usable, else on the CPU (a few minutes on 2 cores).
#   1. builds the engine (release build) if it is not built yet
#   2. trains an 8000-token WordPiece vocabulary on the corpus  -> runs/demo/vocab.txt
#   3. tokenizes the corpus into pre-training shards              -> runs/demo/shards/
#   4. pre-trains configs/electra-tiny.yaml                       -> runs/demo/checkpoints/
#      (progress on stderr, metrics.jsonl, checkpoints HF transformers can load, metrics.png)
# Usage: scripts/demo.sh [--corpus FILE_OR_DIR] [extra `electra pretrain` options, e.g.
#        --set train.steps=100]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
corpus="demo/corpus.txt.zst"
if [[ "${1:-}" == "--corpus" ]]; then
  corpus="$2"
  shift 2
fi

if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  preset=cuda-release
else
  preset=cpu
fi
electra="build/$preset/apps/electra"
if [[ ! -x "$electra" ]]; then
  echo "demo: building the engine (cmake --preset $preset)"
  cmake --preset "$preset" >/dev/null
  cmake --build "build/$preset" --target electra -j "$(nproc)"
fi

out=runs/demo
mkdir -p "$out"
if [[ ! -f "$out/vocab.txt" ]]; then
  "$electra" build-vocab --input "$corpus" --vocab-size 8000 --output "$out/vocab.txt"
fi
if [[ ! -d "$out/shards" ]]; then
  "$electra" build-data --input "$corpus" --vocab "$out/vocab.txt" --output "$out/shards" \
    --seq-len 128
fi
"$electra" pretrain --config configs/electra-tiny.yaml "$@"
echo "demo: done; checkpoints, metrics.jsonl and metrics.png are in $out/checkpoints"
