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
# Usage: bench/ablation.sh --budget-flops F | --budget-s S [--size tiny|small]
#          [--tasks "CoLA SST-2 MRPC RTE STS-B WNLI"] [--seeds 1]
#          [--objectives "electra electra-15 mlm replace-mlm all-tokens-mlm"]
#          [--variant "LABEL:key=value[,key=value...]"]... [--sweep generator-size|generator-training]
#          [--data DIR] [--vocab FILE] [--device auto|cpu|cuda] [--probe-updates 200]
#          [--corpus-lines N] [--max-train N] [--epochs N] [--ft-seq-len 64] [--threads N]
#          [--set key=value]... [--finetune-set key=value]... [--out DIR] [--electra BIN]
#   --budget-flops   pre-training FLOPs per row (e.g. 3e13); updates = floor(F / FLOPs of
#                    one update of that row, as `electra pretrain --dry-run` prints it)
#   --budget-s       instead: pre-training seconds per row at the first row's speed; a probe of
#                    --probe-updates updates of the first row measures its FLOP/s (its last logged
#                    seq/s x its FLOPs per update / batch) and F = S x that rate, the same for every
#                    row (rows whose updates run at fewer FLOP/s take longer)
#   --data           the folder with corpus/ and glue/ (default ../shared/data; bench/table1_pack.sh
#                    makes one to carry to a device)
#   --vocab          shards and models with this vocabulary (e.g. the BERT uncased one with --size
#                    small; model.vocab_size = its lines) instead of an 8000-token one built here
#   --electra        the binary (default $ELECTRA_BIN, else build/cpu/apps/electra)
#   --device         train.device and finetune.device (default auto: the GPU when there is one)
#   --size           configs/electra-{tiny,small}.yaml
#   --corpus-lines   build the vocabulary (8000 tokens) and shards from the first N lines of each
#                    ../shared/data/corpus file (default 0: all of it)
#   --max-train      fine-tune on the first N training examples of each task (default: all)
#   --epochs         fine-tuning epochs (default: the task's config)
#   --set            a pre-training config override for every row (e.g. train.batch_size=8)
#   --finetune-set   a fine-tuning config override for every task (e.g. finetune.attention=unfused)
#   --variant        a row of its own: LABEL and the overrides that make it (instead of the
#                    --objectives rows; e.g. "gen x0.5:model.generator_multiplier=0.5")
#   --sweep          a preset list of --variant rows (above)
# Every row pre-trains with train.seed 1 and fine-tunes with finetune.seed 1, 2, ... (--seeds)
# on the same data; the first 10% of the updates warm up. A task's dev metric is the best epoch's
# (what `electra finetune` reports; with --epochs 1, the only one), its median over the seeds, and
# with several seeds [min, max] beside it, to judge whether two rows differ by more than the seeds.
# A run cut off by a time limit continues when the same command runs again with the same --out:
# a row's finished pre-training and a task's finished fine-tuning are not repeated, and a
# pre-training stopped by SIGINT resumes from its checkpoint.
#
# On a GPU (Table 5 at ELECTRA-Small size inside one window; two commands of at most 10 minutes,
# the second the same command, which continues): with the data of bench/table1_pack.sh carried,
#   ELECTRA_BIN=bin/electra timeout -s INT 590 bench/ablation.sh --size small --budget-s 40 \
#     --data carry/table1 --vocab carry/table1/vocab.txt --tasks "CoLA SST-2 MRPC STS-B RTE" \
#     --seeds 3 --max-train 8000 --epochs 3 --ft-seq-len 128 --out runs/ablation
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
budget=""
budget_s=""
probe_updates=200
data="$root/../shared/data"
vocab=""
device=auto
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
ft_set=()
variants=()
out="$root/runs/ablation"
electra="${ELECTRA_BIN:-$root/build/cpu/apps/electra}"
die() { echo "ablation.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --budget-flops) budget="$2" ;;
    --budget-s) budget_s="$2" ;;
    --probe-updates) probe_updates="$2" ;;
    --data) data="$2" ;;
    --vocab) vocab="$2" ;;
    --device) device="$2" ;;
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
    --finetune-set) ft_set+=(--set "$2") ;;
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
[[ -n "$budget" || -n "$budget_s" ]] || die "--budget-flops F or --budget-s S is required"
[[ -z "$budget" || -z "$budget_s" ]] || die "--budget-flops and --budget-s exclude each other"
# Without --variant / --sweep, one row per objective.
if [[ ${#variants[@]} -eq 0 ]]; then
  for objective in "${objectives[@]}"; do variants+=("$objective:objective=$objective"); done
fi
for v in "${variants[@]}"; do
  [[ "$v" == *:*=* ]] || die "--variant \"$v\": LABEL:key=value[,key=value...]"
done
is_positive() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$1" 2>/dev/null; }
[[ -z "$budget" ]] || is_positive "$budget" || die "--budget-flops $budget: not a positive number"
[[ -z "$budget_s" ]] || is_positive "$budget_s" || die "--budget-s $budget_s: not a positive number"
[[ "$probe_updates" =~ ^[0-9]+$ && "$probe_updates" -ge 8 ]] ||
  die "--probe-updates $probe_updates: a whole number, at least 8"
[[ "$device" == auto || "$device" == cpu || "$device" == cuda ]] || die "--device $device: auto, cpu or cuda"
[[ -z "$vocab" || -f "$vocab" ]] || die "--vocab $vocab: no such file"
[[ "$size" == tiny || "$size" == small ]] || die "--size $size: tiny or small"
[[ -x "$electra" ]] || die "$electra: no electra binary (build the cpu preset, or --electra BIN)"
shared="$data"
[[ -d "$shared/corpus" && -d "$shared/glue" ]] || { echo "skipped: $data/corpus and glue/ not found"; exit 77; }
for task in "${tasks[@]}"; do
  [[ -d "$shared/glue/$task" ]] || die "--tasks: no $shared/glue/$task"
done
config="$root/configs/electra-$size.yaml"
mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.log" >&2; }

# The data: one vocabulary and one set of shards for every objective.
# build-vocab and build-data read the .txt.zst files themselves; --corpus-lines cuts them here.
if [[ ! -d "$out/shards" ]]; then
  corpus="$shared/corpus"
  if [[ "$corpus_lines" -gt 0 ]]; then
    corpus="$out/corpus"
    mkdir -p "$corpus"
    for f in "$shared"/corpus/*.zst; do
      zstd -dc "$f" | head -n "$corpus_lines" >"$corpus/$(basename "$f" .zst)" || true
    done
  fi
  if [[ -n "$vocab" ]]; then
    cp "$vocab" "$out/vocab.txt"
  else
    log "vocabulary from $corpus"
    "$electra" build-vocab --input "$corpus" --vocab-size 8000 --output "$out/vocab.txt" \
      >"$out/build.log" 2>&1
  fi
  log "shards from $corpus"
  "$electra" build-data --input "$corpus" --vocab "$out/vocab.txt" --output "$out/shards.tmp" \
    --seq-len 128 >>"$out/build.log" 2>&1
  mv "$out/shards.tmp" "$out/shards"
fi
common=(--config "$config" --set data.shards="$out/shards" --set data.vocab="$out/vocab.txt"
  --set model.vocab_size="$(wc -l <"$out/vocab.txt")" --set train.device="$device"
  --set train.threads="$threads" --set checkpoint.every=0 --set checkpoint.keep=1 "${pre_set[@]}")

ft_args=(--vocab "$out/vocab.txt" --seeds "$seeds" --set finetune.max_seq_len="$ft_seq_len"
  --set finetune.device="$device" --threads "$threads" "${ft_set[@]}")
[[ -n "$max_train" ]] && ft_args+=(--max-train "$max_train")
# configs/glue.yaml gives RTE and STS-B their own epochs: --epochs replaces those too.
[[ -n "$epochs" ]] && ft_args+=(--set finetune.epochs="$epochs" --set tasks.rte.epochs="$epochs"
  --set tasks.sts-b.epochs="$epochs")

# A row's overrides (the --set pairs of "LABEL:key=value,...") and the FLOPs of one of its updates.
row_overrides() {
  overrides=()
  local kv kvs
  IFS=',' read -r -a kvs <<<"${1#*:}"
  for kv in "${kvs[@]}"; do overrides+=(--set "$kv"); done
}
dry_run() { "$electra" pretrain "${common[@]}" "${overrides[@]}" --dry-run 2>&1; }

# --budget-s: the FLOPs the first row does in S seconds at its probed speed, kept for reruns.
if [[ -n "$budget_s" && ! -f "$out/budget_flops" ]]; then
  row_overrides "${variants[0]}"
  plan="$(dry_run)"
  flops="$(sed -n 's/^  FLOPs per update ([a-z0-9-]*): //p' <<<"$plan")"
  batch="$(sed -n 's/^pretrain --dry-run: .* micro-batch \([0-9]*\) x [0-9]* tokens per rank (\([0-9]*\) .*/\1 * \2/p' <<<"$plan")"
  [[ -n "$flops" && -n "$batch" ]] || die "pretrain --dry-run printed no FLOPs or batch line"
  log "probe: $probe_updates updates of ${variants[0]%%:*}"
  rm -rf "$out/probe"
  "$electra" pretrain "${common[@]}" "${overrides[@]}" --set train.steps=$((probe_updates * 100)) \
    --set logging.every=$((probe_updates / 4)) --set checkpoint.dir="$out/probe" \
    --stop-after "$probe_updates" >"$out/probe.log" 2>&1 || die "probe failed: $(tail -1 "$out/probe.log")"
  rm -rf "$out/probe"
  seq_per_s="$(sed -n 's/.* | \([0-9.]*\) seq\/s .*/\1/p' "$out/probe.log" | tail -1)"
  [[ -n "$seq_per_s" ]] || die "the probe printed no seq/s ($out/probe.log)"
  python3 -c "import sys; s, r, b, f = map(float, sys.argv[1:]); print('%.6g' % (s * r / b * f))" \
    "$budget_s" "$seq_per_s" "$((batch))" "$flops" >"$out/budget_flops"
  echo "$budget_s" >"$out/budget_s"
  log "budget: $budget_s s at $seq_per_s seq/s = $(cat "$out/budget_flops") FLOPs per row"
fi
if [[ -n "$budget_s" ]]; then
  [[ "$(cat "$out/budget_s")" == "$budget_s" ]] ||
    die "$out was sized for --budget-s $(cat "$out/budget_s"): give it that, or another --out"
  budget="$(cat "$out/budget_flops")"
fi

: >"$out/rows.tsv"
for v in "${variants[@]}"; do
  label="${v%%:*}"
  row_overrides "$v"
  flops="$(dry_run | sed -n 's/^  FLOPs per update ([a-z0-9-]*): //p')"
  [[ -n "$flops" ]] || die "$label: pretrain --dry-run printed no FLOPs per update"
  steps="$(python3 -c "import sys; print(int(float(sys.argv[1]) // float(sys.argv[2])))" "$budget" "$flops")"
  [[ "$steps" -ge 10 ]] || die "$label: the budget buys $steps updates of $flops FLOPs (< 10)"
  total="$(python3 -c "import sys; print('%.3g' % (int(sys.argv[1]) * float(sys.argv[2])))" "$steps" "$flops")"
  dir="$out/${label// /_}"
  ckpt="$dir/checkpoint-$(printf %08d "$steps")"
  if [[ ! -d "$ckpt" ]]; then
    resume=()
    compgen -G "$dir/checkpoint-*" >/dev/null && resume=(--resume "$dir")
    log "$label: pre-training $steps updates of $flops FLOPs ${resume[*]}"
    "$electra" pretrain "${common[@]}" "${overrides[@]}" --set train.steps="$steps" \
      --set schedule.warmup_steps=$((steps / 10)) --set logging.every=$(((steps + 9) / 10)) \
      --set checkpoint.dir="$dir" "${resume[@]}" >>"$dir.pretrain.log" 2>&1 ||
      die "$label: pretrain failed: $(tail -2 "$dir.pretrain.log")"
    # A SIGINT (a time limit) saves a checkpoint and exits 0: the run is not finished.
    [[ -d "$ckpt" ]] || { log "$label: stopped before update $steps: run the same command again"; exit 75; }
  fi
  row="$label	$steps	$total"
  for task in "${tasks[@]}"; do
    name="$task-${label// /_}"
    # "<task> seed N: best epoch E: <metric> <value> [, <metric> <value>...] (T s)", one per seed.
    if [[ $(grep -c " seed [0-9]*: best epoch " "$out/ft-$name.txt" 2>/dev/null) -ne $seeds ]]; then
      log "$label: fine-tuning $task"
      "$electra" finetune --task "$task" --data-dir "$shared/glue/$task" --init "$ckpt" \
        --output "$out/ft/$name" "${ft_args[@]}" >"$out/ft-$name.txt" 2>"$out/ft-$name.log" ||
        die "$label $task: finetune failed: $(tail -2 "$out/ft-$name.log")"
      rm -rf "$out/ft/$name"  # the fine-tuned models; the scores are in the .txt
    fi
    # The first metric of every seed: "<metric> <value> <value>...".
    metric="$(grep " seed [0-9]*: best epoch " "$out/ft-$name.txt" |
      sed 's/.*best epoch [0-9]*: \([a-z0-9]*\) \([-0-9.e]*\).*/\1 \2/' | awk '{m = $1; v = v " " $2} END {print m v}')"
    [[ -n "$metric" ]] || die "$label $task: no result line in $out/ft-$name.txt"
    row+="	$metric"
  done
  echo "$row" >>"$out/rows.tsv"
done

python3 - "$out/rows.tsv" "$budget" "$size" "$seeds" "${tasks[@]}" >"$out/table.md" <<'PY'
import statistics, sys
rows_path, budget, size, seeds, tasks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows = [line.rstrip("\n").split("\t") for line in open(rows_path) if line.strip()]
print(f"Pre-training budget {float(budget):.3g} FLOPs per row, ELECTRA-{size}; "
      f"dev metrics are medians over {seeds} fine-tuning seed(s) [min, max over the seeds]; x100.\n")
header = ["row", "updates", "FLOPs"]
for i, task in enumerate(tasks):
    metric = rows[0][3 + i].split(" ")[0] if rows else ""
    header.append(f"{task} ({metric})")
header.append("mean")
print("| " + " | ".join(header) + " |")
print("|" + " --- |" * len(header))
for r in rows:
    seeds = [[100 * float(v) for v in cell.split(" ")[1:]] for cell in r[3:]]
    medians = [statistics.median(values) for values in seeds]
    cells = [f"{m:.1f}" + (f" [{min(v):.1f}, {max(v):.1f}]" if len(v) > 1 else "")
             for m, v in zip(medians, seeds)]
    mean = sum(medians) / len(medians)
    print("| " + " | ".join(r[:3] + cells + [f"{mean:.1f}"]) + " |")
PY
log "table in $out/table.md"
cat "$out/table.md"
