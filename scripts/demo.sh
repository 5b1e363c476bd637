#!/usr/bin/env bash
# The README's demo: pre-train ELECTRA from scratch on real English text, then say what the
# discriminator learned.
#   1. runs scripts/setup.sh if a build tool or the text is missing, builds the engine if needed
#   2. English prose (scripts/english_corpus.sh): ../shared/data/corpus when present, else the
#      GCIDE dictionary that setup installs from Debian's dict-gcide     -> runs/demo/corpus.txt
#   3. an 8000-token WordPiece vocabulary and pre-training shards       -> runs/demo/{vocab.txt,shards}
#   4. pre-trains electra-tiny on the CPU (2000 updates, about 4 minutes on 2 cores), or on a GPU
#      ELECTRA-Small's architecture with this vocabulary (2000 updates)  -> runs/demo/checkpoints
#   5. prints where the checkpoint (HF transformers loads its discriminator/ with
#      from_pretrained), metrics.jsonl and metrics.png are, and the discriminator's accuracy and
#      replaced-token recall over the last updates against the trivial "everything is original"
# Usage: scripts/demo.sh [extra `electra pretrain` options, e.g. --set train.steps=100]
# Environment (for tests): ELECTRA_BIN (a built `electra`: no build step), DEMO_OUT (default
# runs/demo), DEMO_CORPUS_MB (keep only the first N MB of text; default all).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${DEMO_OUT:-runs/demo}"

if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null ||
  { [[ ! -d ../shared/data/corpus ]] && [[ ! -f /usr/share/dictd/gcide.dict.dz ]]; }; then
  echo "demo: installing dependencies (scripts/setup.sh)"
  scripts/setup.sh
fi

# The CUDA build only where a GPU can run it (nvidia-smi lists one); else the quicker CPU build.
if { command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; } &&
  nvidia-smi -L >/dev/null 2>&1; then
  preset=cuda-release
else
  preset=cpu
fi
electra="${ELECTRA_BIN:-build/$preset/apps/electra}"
if [[ ! -x "$electra" ]]; then
  echo "demo: building the engine (cmake --preset $preset)"
  cmake --preset "$preset" >/dev/null
  cmake --build "build/$preset" --target electra -j "$(nproc)"
fi

mkdir -p "$out"
[[ -s "$out/corpus.txt" ]] || scripts/english_corpus.sh "$out/corpus.txt" "${DEMO_CORPUS_MB:-0}"
[[ -f "$out/vocab.txt" ]] ||
  "$electra" build-vocab --input "$out/corpus.txt" --vocab-size 8000 --output "$out/vocab.txt"
[[ -d "$out/shards" ]] || "$electra" build-data --input "$out/corpus.txt" \
  --vocab "$out/vocab.txt" --output "$out/shards" --seq-len 128

# `electra version` lists the usable GPUs ("gpu 0: ..."); pretrain picks the first (device: auto).
run=(--config configs/electra-tiny.yaml --set train.steps=2000 --set schedule.warmup_steps=200
  --set logging.every=50 --set checkpoint.every=500)
if "$electra" version | grep -q "^gpu 0:"; then
  run=(--config configs/electra-small.yaml --set model.vocab_size=8000 --set train.steps=2000
    --set schedule.warmup_steps=200 --set logging.every=100 --set checkpoint.every=1000)
fi
run+=(--set data.shards="$out/shards" --set data.vocab="$out/vocab.txt"
  --set checkpoint.dir="$out/checkpoints")
"$electra" pretrain "${run[@]}" "$@"

checkpoint="$(ls -d "$out"/checkpoints/checkpoint-* | sort | tail -1)"
echo
echo "demo: done"
echo "  checkpoint:    $checkpoint (discriminator/ and generator/ load with HF from_pretrained)"
echo "  metrics:       $out/checkpoints/metrics.jsonl"
[[ -f "$out/checkpoints/metrics.png" ]] && echo "  plot:          $out/checkpoints/metrics.png"
python3 - "$out/checkpoints/metrics.jsonl" <<'PY'
import json, math, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
last = rows[-max(1, len(rows) // 5):]  # the last fifth of the logged updates
mean = lambda key: sum(r[key] for r in last) / len(last)
acc, recall, replaced = mean("disc_acc"), mean("disc_recall"), mean("replaced_frac")
print(f"  discriminator, mean of the last {len(last)} logged updates (steps {last[0]['step']}-"
      f"{last[-1]['step']}):")
print(f"    accuracy {acc:.3f}   vs {1 - replaced:.3f} for 'everything is original'")
constant = -(replaced * math.log(replaced) + (1 - replaced) * math.log(1 - replaced))
print(f"    loss (BCE) {mean('disc_loss'):.4f} vs {constant:.4f} for the best constant prediction")
print(f"    replaced-token recall {recall:.3f} (precision {mean('disc_precision'):.3f})"
      f"   vs 0 for 'everything is original'")
PY
