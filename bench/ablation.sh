#!/usr/bin/env bash
# The paper's Table 5 at a FLOP budget (docs/OBJECTIVES.md): pre-trains each objective
# (electra, electra-15, mlm, replace-mlm, all-tokens-mlm) for the same pre-training FLOPs (the
# engine's FLOP counter, models/flops.h: an mlm update costs less than an ELECTRA one, so the
# update counts differ), fine-tunes each result on the GLUE tasks of ../shared/data/glue with fixed
# seeds, and writes a Table 5-shaped markdown table (objective, updates, FLOPs, the dev metric of
# each task as the median over the seeds, their mean) to OUT/table.md. The same machinery compares
# other rows at the same budget: --variant rows (a label and config overrides each), or a preset
# --sweep: generator-size (Figure 3 left: the generator's hidden size as a fraction of the
# discriminator's, 0.25 to 1, objective electra) or generator-training (Figure 3 right, the joint
# variants: the MLM generator, adversarial training, the unigram generator; two-stage splits its
# FLOPs over two stages and is not in the preset).
# Usage: bench/ablation.sh --budget-flops F [--size tiny|small] [--tasks "CoLA SST-2 MRPC RTE STS-B WNLI"]
#          [--seeds 1] [--objectives "electra electra-15 mlm replace-mlm all-tokens-mlm"]
#          [--variant "LABEL:key=value[,key=value...]"]... [--sweep generator-size|generator-training]
#          [--corpus-lines N] [--max-train N] [--epochs N] [--ft-seq-len 64] [--threads N]
#          [--set key=value]... [--out DIR] [--electra BIN]
#   --budget-flops   pre-training FLOPs per row (e.g. 3e13); updates = floor(F / FLOPs of
#                    one update of that row, as `electra pretrain --dry-run` prints it)
#   --size           configs/electra-{tiny,small}.yaml
#   --corpus-lines   build the vocabulary (8000 tokens) and shards from the first N lines of each
#                    ../shared/data/corpus file (default 0: all of it)
#   --max-train      fine-tune on the first N training examples of each task (default: all)
#   --epochs         fine-tuning epochs (default: the task's config)
#   --set            a pre-training config override for every row (e.g. train.batch_size=8)
#   --variant        a row of its own: LABEL and the overrides that make it (instead of the
#                    --objectives rows; e.g. "gen x0.5:model.generator_multiplier=0.5")
#   --sweep          a preset list of --variant rows (above)
# Every row pre-trains with train.seed 1 and fine-tunes with finetune.seed 1, 2, ... (--seeds)
# on the same data; the first 10% of the updates warm up. A task's dev metric is the best epoch's
# (what `electra finetune` reports; with --epochs 1, the only one), its median over the seeds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
budget=""
size=tiny
tasks=(CoLA SST-2 MRPC RTE STS-B WNLI)
seeds=1
objectives=(electra electra-15 mlm replace-mlm all-tokens-mlm)
corpus_lines=0
max_train=""
epochs=""
ft_seq_len=64
threads=0
pre_set=()
variants=()
out="$root/runs/ablation"
electra="$root/build/cpu/apps/electra"
die() { echo "ablation.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --budget-flops) budget="$2" ;;
    --size) size="$2" ;;
    --tasks) read -r -a tasks <<<"$2" ;;
    --seeds) seeds="$2" ;;
    --objectives) read -r -a objectives <<<"$2" ;;
    --corpus-lines) corpus_lines="$2" ;;
    --max-train) max_train="$2" ;;
    --epochs) epochs="$2" ;;
    --ft-seq-len) ft_seq_len="$2" ;;
    --threads) threads="$2" ;;
    --set) pre_set+=(--set "$2") ;;
    --variant) variants+=("$2") ;;
    --sweep)
      case "$2" in
        generator-size)
          variants+=("gen x0.25:model.generator_multiplier=0.25" "gen x0.5:model.generator_multiplier=0.5"
            "gen x0.75:model.generator_multiplier=0.75" "gen x1:model.generator_multiplier=1") ;;
        generator-training)
          variants+=("mle:generator_training=mle" "adversarial:generator_training=adversarial"
            "unigram:generator=unigram") ;;
        *) die "--sweep $2: generator-size or generator-training" ;;
      esac ;;
    --out) out="$2" ;;
    --electra) electra="$2" ;;
    *) die "unknown option $1 (see the top of bench/ablation.sh)" ;;
  esac
  shift 2
done
[[ -n "$budget" ]] || die "--budget-flops F is required"
# Without --variant / --sweep, one row per objective.
if [[ ${#variants[@]} -eq 0 ]]; then
  for objective in "${objectives[@]}"; do variants+=("$objective:objective=$objective"); done
fi
for v in "${variants[@]}"; do
  [[ "$v" == *:*=* ]] || die "--variant \"$v\": LABEL:key=value[,key=value...]"
done
python3 -c "import sys; f = float(sys.argv[1]); sys.exit(0 if f > 0 else 1)" "$budget" 2>/dev/null ||
  die "--budget-flops $budget: not a positive number"
[[ "$size" == tiny || "$size" == small ]] || die "--size $size: tiny or small"
[[ -x "$electra" ]] || die "$electra: no electra binary (build the cpu preset, or --electra BIN)"
shared="$root/../shared/data"
[[ -d "$shared/corpus" && -d "$shared/glue" ]] || { echo "skipped: ../shared/data not found"; exit 77; }
for task in "${tasks[@]}"; do
  [[ -d "$shared/glue/$task" ]] || die "--tasks: no $shared/glue/$task"
done
config="$root/configs/electra-$size.yaml"
mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.log" >&2; }

# The data: one vocabulary and one set of shards for every objective.
if [[ ! -d "$out/shards" ]]; then
  mkdir -p "$out/corpus"
  for f in "$shared"/corpus/*.zst; do
    name="$(basename "$f" .zst)"
    if [[ "$corpus_lines" -gt 0 ]]; then
      zstd -dc "$f" | head -n "$corpus_lines" >"$out/corpus/$name" || true
    else
      zstd -dc "$f" >"$out/corpus/$name"
    fi
  done
  log "vocabulary and shards from $out/corpus"
  "$electra" build-vocab --input "$out/corpus" --vocab-size 8000 --output "$out/vocab.txt" \
    >"$out/build.log" 2>&1
  "$electra" build-data --input "$out/corpus" --vocab "$out/vocab.txt" --output "$out/shards.tmp" \
    --seq-len 128 >>"$out/build.log" 2>&1
  mv "$out/shards.tmp" "$out/shards"
fi
common=(--config "$config" --set data.shards="$out/shards" --set data.vocab="$out/vocab.txt"
  --set model.vocab_size=8000 --set train.device=cpu --set train.threads="$threads"
  --set checkpoint.every=0 --set checkpoint.keep=1 "${pre_set[@]}")

ft_args=(--vocab "$out/vocab.txt" --seeds "$seeds" --set finetune.max_seq_len="$ft_seq_len"
  --threads "$threads")
[[ -n "$max_train" ]] && ft_args+=(--max-train "$max_train")
# configs/glue.yaml gives RTE and STS-B their own epochs: --epochs replaces those too.
[[ -n "$epochs" ]] && ft_args+=(--set finetune.epochs="$epochs" --set tasks.rte.epochs="$epochs"
  --set tasks.sts-b.epochs="$epochs")

: >"$out/rows.tsv"
for v in "${variants[@]}"; do
  label="${v%%:*}"
  overrides=()
  IFS=',' read -r -a kvs <<<"${v#*:}"
  for kv in "${kvs[@]}"; do overrides+=(--set "$kv"); done
  flops="$("$electra" pretrain "${common[@]}" "${overrides[@]}" --dry-run 2>&1 |
    sed -n 's/^  FLOPs per update ([a-z0-9-]*): //p')"
  [[ -n "$flops" ]] || die "$label: pretrain --dry-run printed no FLOPs per update"
  steps="$(python3 -c "import sys; print(int(float(sys.argv[1]) // float(sys.argv[2])))" "$budget" "$flops")"
  [[ "$steps" -ge 10 ]] || die "$label: the budget buys $steps updates of $flops FLOPs (< 10)"
  total="$(python3 -c "import sys; print('%.3g' % (int(sys.argv[1]) * float(sys.argv[2])))" "$steps" "$flops")"
  dir="$out/${label// /_}"
  ckpt="$dir/checkpoint-$(printf %08d "$steps")"
  if [[ ! -d "$ckpt" ]]; then
    log "$label: pre-training $steps updates of $flops FLOPs"
    "$electra" pretrain "${common[@]}" "${overrides[@]}" --set train.steps="$steps" \
      --set schedule.warmup_steps=$((steps / 10)) --set logging.every=$(((steps + 9) / 10)) \
      --set checkpoint.dir="$dir" >"$dir.pretrain.log" 2>&1 ||
      die "$label: pretrain failed: $(tail -2 "$dir.pretrain.log")"
  fi
  row="$label	$steps	$total"
  for task in "${tasks[@]}"; do
    log "$label: fine-tuning $task"
    name="$task-${label// /_}"
    "$electra" finetune --task "$task" --data-dir "$shared/glue/$task" --init "$ckpt" \
      --output "$out/ft/$name" "${ft_args[@]}" >"$out/ft-$name.txt" 2>"$out/ft-$name.log" ||
      die "$label $task: finetune failed: $(tail -2 "$out/ft-$name.log")"
    # "<task> median over N seeds: <metric> <value>", or with one seed
    # "<task> seed 1: best epoch E: <metric> <value> [<metric> <value>...] (T s)"
    metric="$(grep " median over " "$out/ft-$name.txt" | tail -1 | sed 's/.*: //' || true)"
    [[ -n "$metric" ]] || metric="$(grep " seed [0-9]*: best epoch " "$out/ft-$name.txt" |
      tail -1 | sed 's/.*best epoch [0-9]*: //' | cut -d' ' -f1-2 || true)"
    [[ -n "$metric" ]] || die "$label $task: no result line in $out/ft-$name.txt"
    row+="	$metric"
  done
  echo "$row" >>"$out/rows.tsv"
done

python3 - "$out/rows.tsv" "$budget" "$size" "$seeds" "${tasks[@]}" >"$out/table.md" <<'PY'
import sys
rows_path, budget, size, seeds, tasks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows = [line.rstrip("\n").split("\t") for line in open(rows_path) if line.strip()]
print(f"Pre-training budget {float(budget):.3g} FLOPs per row, ELECTRA-{size}; "
      f"dev metrics are medians over {seeds} fine-tuning seed(s); x100.\n")
header = ["row", "updates", "FLOPs"]
for i, task in enumerate(tasks):
    metric = rows[0][3 + i].split(" ")[0] if rows else ""
    header.append(f"{task} ({metric})")
header.append("mean")
print("| " + " | ".join(header) + " |")
print("|" + " --- |" * len(header))
for r in rows:
    values = [100 * float(cell.split(" ")[1].rstrip(",")) for cell in r[3:]]
    mean = sum(values) / len(values)
    print("| " + " | ".join(r[:3] + [f"{v:.1f}" for v in values] + [f"{mean:.1f}"]) + " |")
PY
log "table in $out/table.md"
cat "$out/table.md"
