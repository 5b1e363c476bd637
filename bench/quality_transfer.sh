#!/usr/bin/env bash
# Evidence of transfer (docs/QUALITY.md): pre-train electra-tiny on ../shared/data/corpus,
# then fine-tune on CoLA, SST-2, MRPC, STS-B and RTE from ../shared/data/glue, against the same
# fine-tuning from a randomly initialised discriminator of the same size (--from-scratch) with the
# same budget, over several seeds (the median is reported, as in the paper). Prints one line per
# (task, init) and a markdown table at the end.
# Usage: bench/quality_transfer.sh [--steps 1500] [--warmup N] [--seeds 3] [--phase all]
#          [--use-step N] [--tasks "CoLA SST-2 MRPC STS-B RTE"] [--ft-set key=value]... [--out DIR] [--electra BIN]
#   --phase pretrain | scratch | pretrained | table | all: the from-scratch fine-tuning does not
#   need the pre-training, so it can run beside it (each phase uses one core).
#   CPU-sized fine-tuning: the paper's epochs (3; 10 for RTE and STS-B) unless --ft-set changes
#   them, max_seq_len 64, the first 20000 SST-2 sentences. --ft-set applies to both inits.
#   --use-step N: fine-tune from the pre-training checkpoint of update N (default: the last).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=1500
warmup=""
seeds=3
phase=all
tasks=(CoLA SST-2 MRPC STS-B RTE)
ft_set=()
use_step=""
out="$root/runs/quality"
electra="$root/build/cpu/apps/electra"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --phase) phase="$2"; shift 2 ;;
    --use-step) use_step="$2"; shift 2 ;;
    --tasks) read -r -a tasks <<<"$2"; shift 2 ;;
    --ft-set) ft_set+=(--set "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --electra) electra="$2"; shift 2 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
done
warmup="${warmup:-$((steps / 10))}"
shared="$root/../shared/data"
[[ -d "$shared/corpus" && -d "$shared/glue" ]] || { echo "needs ../shared/data"; exit 77; }
mkdir -p "$out"
ckpt="$out/pretrain/checkpoint-$(printf %08d "${use_step:-$steps}")"

prepare() {
  [[ -f "$out/vocab.txt" ]] ||
    "$electra" build-vocab --input "$shared/corpus" --vocab-size 8000 --output "$out/vocab.txt"
  [[ -d "$out/shards" ]] || "$electra" build-data --input "$shared/corpus" \
    --vocab "$out/vocab.txt" --output "$out/shards" --seq-len 128
}

pretrain() {
  [[ -d "$out/pretrain/checkpoint-$(printf %08d "$steps")" ]] && return
  "$electra" pretrain --config "$root/configs/electra-tiny.yaml" \
    --set data.shards="$out/shards" --set data.vocab="$out/vocab.txt" \
    --set train.steps="$steps" --set schedule.warmup_steps="$warmup" \
    --set checkpoint.dir="$out/pretrain" --set checkpoint.every=5000 --set checkpoint.keep=2 \
    --set logging.every=500
}

# finetune INIT_NAME [--from-scratch]: every task, $seeds seeds; the summary line of each task
# is appended to $out/INIT_NAME.txt (the table reads the last one of each task). The sizes (and, from scratch, nothing else) come from a tiny
# checkpoint: the pre-trained one, or for the baseline a 1-step pre-training of the same config.
finetune() {
  local name="$1"
  shift
  local init="$ckpt"
  if [[ "$name" == scratch ]]; then
    init="$out/sizes/checkpoint-00000001"
    [[ -d "$init" ]] || "$electra" pretrain --config "$root/configs/electra-tiny.yaml" \
      --set data.shards="$out/shards" --set data.vocab="$out/vocab.txt" --set train.steps=1 \
      --set checkpoint.dir="$out/sizes" --set checkpoint.every=0 >/dev/null 2>&1
  fi
  for task in "${tasks[@]}"; do
    local args=(--task "$task" --data-dir "$shared/glue/$task" --init "$init"
      --vocab "$out/vocab.txt" --seeds "$seeds" --set finetune.max_seq_len=64
      --output "$out/ft/$task-$name" "${ft_set[@]}" "$@")
    [[ "$task" == "SST-2" ]] && args+=(--max-train 20000)
    "$electra" finetune "${args[@]}" 2>"$out/$task-$name.log" | tee -a "$out/$name.txt"
  done
}

table() {
  local medians_pre medians_scratch
  echo "| task | metric | pre-trained (${use_step:-$steps} updates), median of $seeds | from scratch, median of $seeds |"
  echo "| --- | --- | --- | --- |"
  for task in "${tasks[@]}"; do
    local pre scratch
    pre="$(grep "^$task median" "$out/pretrained.txt" | tail -1 | sed 's/.*: //')"
    scratch="$(grep "^$task median" "$out/scratch.txt" | tail -1 | sed 's/.*: //')"
    echo "| $task | ${pre% *} | ${pre##* } | ${scratch##* } |"
  done
}

case "$phase" in
  pretrain) prepare; pretrain ;;
  scratch) prepare; finetune scratch --from-scratch ;;
  pretrained) prepare; [[ -d "$ckpt" ]] || pretrain; finetune pretrained ;;
  table) table ;;
  all) prepare; pretrain; finetune pretrained; finetune scratch --from-scratch; table ;;
  *) echo "unknown phase $phase"; exit 2 ;;
esac
