#!/usr/bin/env bash
# A 2,000-update bf16 pre-training run of ELECTRA-Small on the GPU against the f32 run
# (TF32 off) from the same seed, data and masking, and how far apart their loss curves are.
# Run from a build tree on a GPU machine (ELECTRA= names another binary). Text: carry/corpus.txt when present (the device machine has no
# ../shared: copy it there with `scripts/english_corpus.sh carry/corpus.txt 40` and name carry/ in
# the run's carry list), else scripts/english_corpus.sh.
# Prints, every 100 updates, both runs' generator and discriminator losses (each a mean over the
# 100 updates), their difference, and at the end the largest relative gap of the smoothed curves.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
electra="${ELECTRA:-$root/build/cuda-release/apps/electra}"
work="${OUT:-/tmp}/bf16_curve"
steps="${STEPS:-2000}"
mkdir -p "$work"
"$electra" version | grep -q "^gpu 0:" || { echo "bf16_curve_bench: no usable GPU"; exit 77; }
if [[ -f "$root/carry/corpus.txt" ]]; then
  corpus="$root/carry/corpus.txt"
else
  corpus="$work/corpus.txt"
  [[ -s "$corpus" ]] || "$root/scripts/english_corpus.sh" "$corpus" 40
fi
[[ -f "$work/vocab.txt" ]] ||
  "$electra" build-vocab --input "$corpus" --vocab-size 8000 --output "$work/vocab.txt"
[[ -d "$work/shards" ]] ||
  "$electra" build-data --input "$corpus" --vocab "$work/vocab.txt" --output "$work/shards"
for precision in bf16 f32; do
  rm -rf "$work/$precision"
  "$electra" pretrain --config "$root/configs/electra-small.yaml" --set model.vocab_size=8000 \
    --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt" \
    --set train.steps="$steps" --set schedule.warmup_steps=$((steps / 10)) \
    --set train.device=cuda --set train.precision="$precision" --set logging.every=1 \
    --set checkpoint.dir="$work/$precision" --set checkpoint.every=0 2>"$work/$precision.log"
done
python3 - "$work/bf16/metrics.jsonl" "$work/f32/metrics.jsonl" <<'PY'
import json, sys
runs = [[json.loads(line) for line in open(path)] for path in sys.argv[1:]]
n = min(len(r) for r in runs)
worst = 0.0
print("updates | gen loss bf16 / f32 | disc loss bf16 / f32 | relative gap gen / disc")
for start in range(0, n, 100):
    window = [r[start:start + 100] for r in runs]
    mean = lambda rows, key: sum(x[key] for x in rows) / len(rows)
    g = [mean(w, "gen_loss") for w in window]
    d = [mean(w, "disc_loss") for w in window]
    gap = (abs(g[0] - g[1]) / g[1], abs(d[0] - d[1]) / d[1])
    worst = max(worst, *gap)
    print(f"{start + 1}-{start + len(window[0])} | {g[0]:.4f} / {g[1]:.4f} | "
          f"{d[0]:.4f} / {d[1]:.4f} | {gap[0]:.4f} / {gap[1]:.4f}")
print(f"RESULT op=bf16_vs_f32_curve shape=small_{n}_updates largest_relative_gap={worst:.4f}")
PY
