#!/usr/bin/env bash
# One GPU window -> one row of the paper's Table 1 (ELECTRA-Small, GLUE dev) in docs/QUALITY.md.
#   1. shards: `electra build-data` on every .txt / .txt.zst of --corpus (both files of
#      ../shared/data/corpus by default, at the config's train.seq_len, with --vocab), or --shards
#      built elsewhere; `electra info` counts their sequences;
#   2. throughput: a probe run of --probe-updates updates (or --seq-per-s N): its steady seq/s
#      (the median of its logging intervals' after the first) and its fixed cost (start, data,
#      CUDA graph capture, the checkpoint: the probe's wall time less its updates at that rate);
#   3. pre-training: train.steps = (time left - fine-tuning reserve - --margin-s - fixed cost) x
#      seq/s / batch (or --pretrain-s instead of the time left less the reserve and margin),
#      warm-up --warmup-fraction of them, linear decay to 0: the whole schedule ends inside the
#      budget, nothing is cut off. The reserve is --seeds x --finetune-s-per-seed;
#   4. fine-tuning: CoLA, SST-2, MRPC, STS-B, RTE from --glue, seed 1 first, then seeds 2..N while
#      the budget has room for another seed at the rate seed 1 took; the median over the seeds
#      that ran, as the paper reports (bench/table1_row.py);
#   5. one row appended to the "Table 1 on a GPU" table of --quality (docs/QUALITY.md): date,
#      hardware, updates, tokens seen, epochs over the data, FLOPs, wall times, seeds, the five
#      tasks and their mean, the command. Also written to OUT/row.md.
# A run cut off by a time limit resumes when the same command runs again with the same --out: the
# plan (OUT/plan.env) is kept, pre-training continues with --resume (a SIGINT from the script's own
# timeout saves a checkpoint; it then exits 75), finished fine-tuning runs are not repeated.
#
# What travels to the device (64 MiB for the checkout and every carried file): the bundle (the
# electra binary and the tracked tree; issue 29) plus the data, carried under carry/ (git-ignored):
# bench/table1_pack.sh carry/table1 writes corpus/ (both corpora as .txt.zst: 32 MiB as shipped,
# less with --corpus-mb), vocab.txt (BERT uncased, 0.2 MB) and glue/ (the five tasks' TSVs,
# 7.4 MiB): 39 MiB, which fits beside the checkout (3.5 MB) and a compressed bundle. The shards
# are built on the device: build-data reads .txt.zst itself and took 0.3 s for the 52 MB enwiki
# file on the H100 machine (first GPU run), and the shards of both corpora (158,730 sequences of
# 128) are 39 MB, more than the compressed text. On the device:
#   ELECTRA_BIN=bin/electra bench/table1_window.sh --budget-s 560 --data carry/table1 \
#     --quality docs/QUALITY.md --out runs/table1 && cp docs/QUALITY.md runs/table1/row.md "$OUT"/
#
# Usage: bench/table1_window.sh --budget-s SECONDS [--electra BIN] [--data DIR] [--corpus DIR |
#          --shards DIR] [--vocab FILE] [--glue DIR] [--config FILE] [--seq-per-s N]
#          [--pretrain-s S] [--probe-updates 400] [--seeds 3] [--finetune-s-per-seed 90]
#          [--warmup-fraction 0.1] [--margin-s 15] [--tasks "CoLA SST-2 MRPC STS-B RTE"]
#          [--max-train N] [--max-eval N]
#          [--pretrain-set key=value]... [--finetune-set key=value]... [--quality FILE]
#          [--label TEXT] [--out DIR]
#   --budget-s      wall seconds for everything this invocation does (data, probe, pre-training,
#                   fine-tuning); one command on the device may run 600 s
#   --electra       the electra binary (default $ELECTRA_BIN, else build/cuda-release/apps/electra
#                   or build/cuda/apps/electra beside this script)
#   --data          a folder with corpus/, vocab/bert-base-uncased-vocab.txt or vocab.txt, glue/
#                   (default ../shared/data; a table1_pack.sh folder has the same layout)
#   --pretrain-s    size the schedule for S seconds of pre-training instead of what this budget
#                   leaves: a schedule longer than one command (at most 600 s on the device) then
#                   runs over several invocations with the same --out, each cut at its own budget
#                   (exit 75) and resumed by the next
#   --seq-per-s     skip the probe: pre-training sequences per second (e.g. 7485, the first GPU
#                   run's, H100); the fixed cost is then --margin-s
#   --finetune-s-per-seed  the fine-tuning reserve per seed (default 90: the five tasks took
#                   8 + 6 + 23 + 7 + 36 = 80 s at one seed in the first GPU run, 2026-11-26, H100)
#   --max-train, --max-eval  the first N training / dev examples of each task (tests; the row says)
#   --pretrain-set, --finetune-set  config overrides for `electra pretrain` / `electra finetune`
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
die() {
  echo "table1_window.sh: $*" >&2
  exit 2
}
budget=""
electra="${ELECTRA_BIN:-}"
data="$root/../shared/data"
corpus="" shards="" vocab="" glue=""
config="$root/configs/electra-small.yaml"
seq_per_s=""
pretrain_s=""
probe_updates=400
seeds=3
ft_per_seed=90
warmup_fraction=0.1
margin=15
tasks=(CoLA SST-2 MRPC STS-B RTE)
max_train="" max_eval=""
pre_set=() ft_set=()
quality="$root/docs/QUALITY.md"
label=""
out="$root/runs/table1"
command_line="bench/table1_window.sh$(printf " %q" "$@")"
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --budget-s) budget="$2" ;;
    --electra) electra="$2" ;;
    --data) data="$2" ;;
    --corpus) corpus="$2" ;;
    --shards) shards="$2" ;;
    --vocab) vocab="$2" ;;
    --glue) glue="$2" ;;
    --config) config="$2" ;;
    --seq-per-s) seq_per_s="$2" ;;
    --pretrain-s) pretrain_s="$2" ;;
    --probe-updates) probe_updates="$2" ;;
    --seeds) seeds="$2" ;;
    --finetune-s-per-seed) ft_per_seed="$2" ;;
    --warmup-fraction) warmup_fraction="$2" ;;
    --margin-s) margin="$2" ;;
    --tasks) read -r -a tasks <<<"$2" ;;
    --max-train) max_train="$2" ;;
    --max-eval) max_eval="$2" ;;
    --pretrain-set) pre_set+=(--set "$2") ;;
    --finetune-set) ft_set+=(--set "$2") ;;
    --quality) quality="$2" ;;
    --label) label="$2" ;;
    --out) out="$2" ;;
    *) die "unknown option $1 (see the top of bench/table1_window.sh)" ;;
  esac
  shift 2
done
start=$SECONDS
is_number() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$1" 2>/dev/null; }
[[ -n "$budget" ]] || die "--budget-s SECONDS is required"
is_number "$budget" || die "--budget-s $budget: not a positive number"
budget="${budget%.*}"
[[ -z "$seq_per_s" ]] || is_number "$seq_per_s" || die "--seq-per-s $seq_per_s: not a positive number"
[[ -z "$pretrain_s" || "$pretrain_s" =~ ^[0-9]+$ ]] || die "--pretrain-s $pretrain_s: not a whole number"
for n in probe_updates seeds ft_per_seed margin; do
  [[ "${!n}" =~ ^[0-9]+$ ]] || die "--${n//_/-} ${!n}: not a whole number"
done
((seeds >= 1)) || die "--seeds must be at least 1"
python3 -c "import sys; sys.exit(0 if 0 <= float(sys.argv[1]) < 1 else 1)" "$warmup_fraction" 2>/dev/null ||
  die "--warmup-fraction $warmup_fraction: not a number in [0, 1)"
for task in "${tasks[@]}"; do
  [[ " CoLA SST-2 MRPC STS-B RTE " == *" $task "* ]] ||
    die "--tasks: $task is not one of the row's CoLA SST-2 MRPC STS-B RTE"
done
if [[ -z "$electra" ]]; then
  for candidate in "$root/build/cuda-release/apps/electra" "$root/build/cuda/apps/electra"; do
    [[ -x "$candidate" ]] && electra="$candidate" && break
  done
fi
[[ -n "$electra" && -x "$electra" ]] || die "no electra binary: give --electra BIN or ELECTRA_BIN"
[[ -f "$config" ]] || die "--config $config: no such file"
[[ -f "$quality" ]] || die "--quality $quality: no such file"
grep -q '^<!-- table1 rows' "$quality" || die "$quality: no '<!-- table1 rows' table to add a row to"
corpus="${corpus:-$data/corpus}"
glue="${glue:-$data/glue}"
if [[ -z "$vocab" ]]; then
  vocab="$data/vocab/bert-base-uncased-vocab.txt"
  [[ -f "$vocab" ]] || vocab="$data/vocab.txt"
fi
[[ -f "$vocab" ]] || die "--vocab $vocab: no such file"
for task in "${tasks[@]}"; do
  [[ -f "$glue/$task/train.tsv" && -f "$glue/$task/dev.tsv" ]] ||
    die "--glue $glue: no $task/train.tsv and dev.tsv"
done
if [[ -n "$shards" ]]; then
  [[ -d "$shards" ]] || die "--shards $shards: no such directory"
else
  [[ -d "$corpus" ]] || die "--corpus $corpus: no such directory"
fi
mkdir -p "$out/ft"
# The sum of a file's lines (seconds), 0 without the file.
sum_file() {
  local total=0 n
  if [[ -f "$1" ]]; then
    while read -r n; do total=$((total + n)); done <"$1"
  fi
  echo "$total"
}
# The wall time of earlier invocations with this --out (a run resumed after a time limit).
prior_wall="$(sum_file "$out/wall.txt")"
trap 'echo $((SECONDS - start)) >>"$out/wall.txt"' EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.log" >&2; }
left() { echo $((budget - (SECONDS - start))); }

# The run's config: the pre-training arguments every run of this window shares.
pretrain=(--config "$config" --set data.vocab="$vocab" "${pre_set[@]}")
plan_line="$("$electra" pretrain "${pretrain[@]}" --set data.shards="$out" --dry-run 2>&1)" ||
  die "pretrain --dry-run failed: $(tail -1 <<<"$plan_line")"
read -r micro seq_len accumulation < <(sed -n \
  's/^pretrain --dry-run: .* micro-batch \([0-9]*\) x \([0-9]*\) tokens per rank (\([0-9]*\) .*/\1 \2 \3/p' \
  <<<"$plan_line") || true
flops="$(sed -n 's/^  FLOPs per update ([a-z0-9-]*): //p' <<<"$plan_line")"
[[ -n "$micro" && -n "$flops" ]] || die "pretrain --dry-run printed no batch or FLOPs line"
batch=$((micro * accumulation))

# 1. Shards.
if [[ -z "$shards" ]]; then
  shards="$out/shards"
  if [[ ! -d "$shards" ]]; then
    log "build-data: $corpus -> $shards (seq $seq_len)"
    rm -rf "$shards.tmp"
    "$electra" build-data --input "$corpus" --vocab "$vocab" --output "$shards.tmp" \
      --seq-len "$seq_len" >"$out/build-data.log" 2>&1 || die "build-data: $(tail -1 "$out/build-data.log")"
    mv "$shards.tmp" "$shards"
  fi
fi
pretrain+=(--set data.shards="$shards")
"$electra" info "$shards" >"$out/info.txt" 2>&1 || die "electra info $shards: $(tail -1 "$out/info.txt")"
examples="$(sed -n 's/^ *examples: //p' "$out/info.txt" | tail -1)"

# 2-3. The plan: kept in plan.env, so that a rerun continues the same schedule.
if [[ ! -f "$out/plan.env" ]]; then
  if [[ -z "$seq_per_s" ]]; then
    ((probe_updates >= 8)) || die "--probe-updates $probe_updates: at least 8"
    log "probe: $probe_updates updates"
    rm -rf "$out/probe"
    probe_start=$EPOCHREALTIME
    "$electra" pretrain "${pretrain[@]}" --set train.steps=$((probe_updates * 100)) \
      --set logging.every=$((probe_updates / 4)) --set checkpoint.every=0 \
      --set checkpoint.dir="$out/probe" --stop-after "$probe_updates" >"$out/probe.log" 2>&1 ||
      die "probe run failed: $(tail -1 "$out/probe.log")"
    probe_wall="$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$probe_start" "$EPOCHREALTIME")"
    # The steady rate: the median of the logged intervals' seq/s after the first (which holds the
    # CUDA graph capture and the first data reads).
    seq_per_s="$(sed -n 's/.* | \([0-9.]*\) seq\/s .*/\1/p' "$out/probe.log" | tail -n +2 |
      python3 -c "import statistics, sys; v = [float(x) for x in sys.stdin]; print(statistics.median(v) if v else '')")"
    [[ -n "$seq_per_s" ]] || die "the probe printed no seq/s ($out/probe.log)"
    rm -rf "$out/probe"
    # The fixed cost of a run: the probe's wall time less its updates at the steady rate.
    fixed="$(python3 -c "import sys; w, n, b, r = map(float, sys.argv[1:]); print(max(0, round(w - n * b / r)))" \
      "$probe_wall" "$probe_updates" "$batch" "$seq_per_s")"
  else
    fixed=0
  fi
  if [[ -n "$pretrain_s" ]]; then
    pretrain_s=$((pretrain_s - fixed))
  else
    pretrain_s=$(($(left) - seeds * ft_per_seed - margin - fixed))
  fi
  steps="$(python3 -c "import sys; s, r, b = map(float, sys.argv[1:]); print(int(s * r / b))" \
    "$pretrain_s" "$seq_per_s" "$batch")"
  ((steps >= 10)) || die "the budget leaves $pretrain_s s of pre-training: $steps updates (< 10);" \
    "raise --budget-s or lower --seeds / --finetune-s-per-seed"
  warmup="$(python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]))))" \
    "$steps" "$warmup_fraction")"
  printf 'steps=%s\nwarmup=%s\nseq_per_s=%s\nfixed_s=%s\nplanned_s=%s\n' "$steps" "$warmup" \
    "$seq_per_s" "$fixed" "$((pretrain_s + fixed))" >"$out/plan.env"
  log "plan: $steps updates of $batch x $seq_len (warm-up $warmup) at $seq_per_s seq/s:" \
    "$pretrain_s s + $fixed s fixed cost"
fi
# shellcheck disable=SC1091
source "$out/plan.env"
pretrain+=(--set train.steps="$steps" --set schedule.warmup_steps="$warmup"
  --set logging.every=$(((steps + 19) / 20)) --set checkpoint.every=0 --set checkpoint.keep=1
  --set checkpoint.dir="$out/pretrain")
checkpoint="$out/pretrain/checkpoint-$(printf %08d "$steps")"

# 3. Pre-training, resumed where a previous invocation stopped; the time left less one seed of
#    fine-tuning is its limit (SIGINT: the engine saves a checkpoint and exits 0).
if [[ ! -f "$checkpoint/trainer_state.json" ]]; then
  resume=()
  compgen -G "$out/pretrain/checkpoint-*" >/dev/null && resume=(--resume "$out/pretrain")
  limit=$(($(left) - ft_per_seed))
  ((limit > 0)) || { log "no time left for pre-training: run the same command again"; exit 75; }
  log "pre-training ${resume[*]:-from scratch}: limit $limit s"
  t=$SECONDS
  rc=0
  # --foreground: electra stays in this script's process group, so a signal sent to the group
  # (an outer `timeout -s INT`, Ctrl-C) reaches it too and it saves a checkpoint.
  timeout --foreground -s INT -k 60 "$limit" "$electra" pretrain "${pretrain[@]}" "${resume[@]}" \
    >>"$out/pretrain.log" 2>&1 || rc=$?
  echo $((SECONDS - t)) >>"$out/pretrain_wall.txt"
  if [[ ! -f "$checkpoint/trainer_state.json" ]]; then
    ((rc == 0 || rc == 124)) || die "pretrain exited $rc: $(tail -1 "$out/pretrain.log")"
    log "pre-training stopped before update $steps: run the same command again to resume"
    exit 75
  fi
fi

# 4. Fine-tuning: seed 1, then further seeds while a seed's time (seed 1's) is left.
finetune() {  # finetune SEED: the five tasks at that seed, each run once (its .txt is its result)
  local task name
  for task in "${tasks[@]}"; do
    name="$task-seed$1"
    grep -q " seed $1: best epoch " "$out/ft/$name.txt" 2>/dev/null && continue
    log "fine-tuning $task, seed $1"
    "$electra" finetune --task "$task" --data-dir "$glue/$task" --init "$checkpoint" \
      --vocab "$vocab" --output "$out/ft/$name" --set finetune.seed="$1" \
      ${max_train:+--max-train "$max_train"} ${max_eval:+--max-eval "$max_eval"} "${ft_set[@]}" \
      >"$out/ft/$name.txt" 2>"$out/ft/$name.log" ||
      die "finetune $task seed $1: $(tail -1 "$out/ft/$name.log")"
    rm -rf "$out/ft/$name"  # the fine-tuned model (56 MB for Small); its score is in the .txt
  done
}
t=$SECONDS
finetune 1
seed_s=$((SECONDS - t))
for ((seed = 2; seed <= seeds; seed++)); do
  if ((seed_s > $(left))); then
    log "seed $seed not run: $(left) s left, a seed took $seed_s s"
    break
  fi
  finetune "$seed"
done

# 5. The row.
pre_wall="$(sum_file "$out/pretrain_wall.txt")"
python3 "$root/bench/table1_row.py" --out "$out" --quality "$quality" --tasks "${tasks[*]}" \
  --steps "$steps" --warmup "$warmup" --batch "$batch" --seq-len "$seq_len" \
  --examples "$examples" --flops "$flops" --pretrain-wall "$pre_wall" \
  --wall $((prior_wall + SECONDS - start)) --label "$label" \
  --subset "${max_train:+first $max_train train}${max_eval:+, first $max_eval dev examples}" \
  --command "$command_line"
log "row written to $quality and $out/row.md"
