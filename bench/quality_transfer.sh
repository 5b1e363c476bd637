#!/usr/bin/env bash
# Evidence of transfer (issue 7, docs/QUALITY.md): pre-train electra-tiny on ../shared/data/corpus,
# then fine-tune on CoLA, SST-2, MRPC, STS-B and RTE from ../shared/data/glue, against the same
# fine-tuning from a randomly initialised discriminator of the same size (--from-scratch) with the
# same budget. Prints one line per (task, init) and a markdown table at the end.
# Usage: bench/quality_transfer.sh [--steps 1500] [--out DIR] [--electra BINARY]
#   (CPU-sized defaults: 3 epochs per task, max_seq_len 64, the first 10000 SST-2 sentences)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=1500
out="$root/runs/quality"
electra="$root/build/cpu/apps/electra"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --electra) electra="$2"; shift 2 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
done
shared="$root/../shared/data"
[[ -d "$shared/corpus" && -d "$shared/glue" ]] || { echo "needs ../shared/data"; exit 77; }
mkdir -p "$out"
echo "quality: $(date -u +%F) $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
if [[ ! -f "$out/vocab.txt" ]]; then
  "$electra" build-vocab --input "$shared/corpus" --vocab-size 8000 --output "$out/vocab.txt"
fi
if [[ ! -d "$out/shards" ]]; then
  "$electra" build-data --input "$shared/corpus" --vocab "$out/vocab.txt" --output "$out/shards" \
    --seq-len 128
fi
if [[ ! -d "$out/pretrain/checkpoint-$(printf %08d "$steps")" ]]; then
  "$electra" pretrain --config "$root/configs/electra-tiny.yaml" \
    --set data.shards="$out/shards" --set data.vocab="$out/vocab.txt" \
    --set train.steps="$steps" --set schedule.warmup_steps=$((steps / 10)) \
    --set optimizer.lr=5e-4 --set checkpoint.dir="$out/pretrain" \
    --set checkpoint.every=0 --set logging.every=100
fi
ckpt="$out/pretrain/checkpoint-$(printf %08d "$steps")"
table="| task | metric | pre-trained ($steps updates) | from scratch |\n| --- | --- | --- | --- |"
for task in CoLA SST-2 MRPC STS-B RTE; do
  args=(--task "$task" --data-dir "$shared/glue/$task" --init "$ckpt" --vocab "$out/vocab.txt"
    --set finetune.max_seq_len=64 --set finetune.epochs=3 --set tasks.rte.epochs=3
    --set tasks.sts-b.epochs=3)
  [[ "$task" == "SST-2" ]] && args+=(--max-train 10000)
  pre="$("$electra" finetune "${args[@]}" --output "$out/ft/$task-pretrained" 2>"$out/$task-pre.log")"
  echo "$pre (pre-trained)"
  scratch="$("$electra" finetune "${args[@]}" --from-scratch --output "$out/ft/$task-scratch" \
    2>"$out/$task-scratch.log")"
  echo "$scratch (from scratch)"
  metric() { sed -n 's/.*best epoch [0-9]*: \([a-z0-9]*\) \([0-9.-]*\).*/\1 \2/p' <<<"$1"; }
  read -r name a <<<"$(metric "$pre")"
  read -r _ b <<<"$(metric "$scratch")"
  table+="\n| $task | $name | $a | $b |"
done
echo -e "$table"
