#!/usr/bin/env bash
# The one script to run on a machine with a GPU: what is broken and how fast is it. It runs the GPU
# bundle that scripts/gpu_bundle.sh built on a development machine (the device has none of the
# project's libraries, so nothing is built there; docs/GPU.md).
#
#   scripts/gpu_check.sh [--bundle FILE.tar.xz|DIR] [--phases LIST] [--out DIR] [--dry-run]
#                        [--attention IMPL] [--unfused-layers]
#     --bundle   default carry/gpu-bundle.tar.xz; unpacked once per machine under $GPU_CHECK_WORK
#     --phases   comma-separated, in order (default: all, as listed below)
#     --out      where the results go (default $OUT, else ./gpu_check_out)
#     --attention IMPL  the GPU's attention kernels (auto, unfused, flash, flash_ds, flash_short:
#                model.attention and finetune.attention), and
#     --unfused-layers  the generator's blocks as separate ops (model.fused_layers: false), for the
#                step phase's own rows and profile and every pre-training and fine-tuning run of
#                the later phases: when the tests phase fails a flash or a fused kernel, the rest
#                of the window still measures a correct update, e.g. `--phases step,user
#                --attention unfused` (default: the configs' choices)
#     --dry-run  without a GPU: run the tests phase anyway (each test reports its skip) and let
#                every other phase say why it did not run; for CI (test/apps/gpu_check_test.sh)
#
# Phases, each held to its budget in seconds (GPU_CHECK_BUDGET_<PHASE> overrides). The budgets add
# up to about 14 minutes, but a phase ends when its steps do: on the 2026-11-27 H100 run
# `--phases tests,step,sanitize,resume` took 280 s and `--phases bench,user` 231 s (the user phase
# cut short by a fault since fixed: count its whole 170 s), two commands that fit a 15-minute device
# window with a machine start:
#   tests     100  every GPU test with ELECTRA_EXPECT_GPU=1 (a skip is a failure), 4 at once;
#                  each test's largest error against its bound goes to the summary
#   sanitize  150  compute-sanitizer memcheck on every GPU test, racecheck and synccheck on the
#                  small-shape cases of attention, layernorm, softmax-CE and embedding
#   bench     240  every *_bench (they validate what they time), bench/attention_sdpa_baseline.py
#                  right after attention_bench (the 2026-11-28 H200 run: attention_bench 48 s,
#                  the SDPA baseline 12 s, the rest to softmax_xent_bench 115 s)
#   step      170  the bf16 update: ours (train_step) on Small seq 128 batch 128, Base seq 128
#                  and 512, Small again with --attention flash_ds, --attention flash_short and
#                  --overlap-generator, then train_step --profile of the Small update, then HF
#                  eager and torch.compile (bench/step_pytorch.py) on the same shapes, or on
#                  those GPU_CHECK_HF_SHAPES names (small128, base128, base512)
#   user      195  the user's path: electra build-data on the bundle's corpus, pretrain
#                  ELECTRA-Small for a fixed time, SIGINT, --resume for a fixed time, SIGINT, the
#                  same pretrain with train.overlap_generator off for 25 s (the serial backward's
#                  seq/s beside the default's), then finetune the first checkpoint on the
#                  bundle's five GLUE tasks
#   resume     75  bit for bit on the GPU: N updates straight (N = 400) against a run stopped by
#                  SIGINT after update N/4 and resumed to N (same checkpoint bytes, or the first
#                  differing tensor named), and two identical runs give identical bytes
#   table1    570  not in the default list: bench/table1_window.sh on the bundle's data (build it
#                  with gpu_bundle.sh --data both), a Table 1 row of ELECTRA-Small in one command,
#                  fine-tuned with up to GPU_CHECK_TABLE1_SEEDS seeds (default 3; each reserves
#                  90 s of the budget, so a shorter budget needs fewer);
#                  run again with the same bundle to resume a run cut at its budget (docs/QUALITY.md)
#   ablation  570  not in the default list: bench/ablation.sh at ELECTRA-Small on the bundle's data,
#                  the paper's Table 5 (electra, electra-15, mlm, replace-mlm, all-tokens-mlm at the
#                  same pre-training FLOPs: GPU_CHECK_ABLATION_ROW_S, default 30, seconds of the
#                  first row's probed speed each; fine-tuned on the five GLUE tasks with
#                  GPU_CHECK_ABLATION_SEEDS seeds, default 2, 8,000 examples, 3 epochs). Sized
#                  for one command: the first GPU run's fine-tuning (80 s for the five tasks at
#                  full size) suggests about 30 s a seed at this size, so 5 x (30 + 2 x 30) s plus
#                  start-ups; a run cut at the budget by SIGINT continues when the phase runs again
#                  on the same machine (ablation.md in $OUT once every row is done)
#   kernels    90  not in the default list: Nsight Compute (ncu, where the machine has it) on the
#                  first update of train_step's Small update, our kernels only (names ending in
#                  _kernel; cuBLASLt's do not): per launch the speed of light (DRAM and SM
#                  throughput), occupancy and warp stall reasons, for the kernels that reach a
#                  fraction of the copy bandwidth without a reason the timings alone can give
# After every phase $OUT holds at most seven files, rewritten: summary.md (one table of everything
# run on this machine so far), steps.tsv, logs.tar.gz (every log), after `step` profile.txt,
# after `table1` row.md (the Table 1 row, also appended to the device's docs/QUALITY.md), after
# `ablation` ablation.md (the Table 5 table) and after `kernels` kernels.csv (ncu's details page,
# one block of rows per launch).
# The exit status is 0 when everything that ran passed, 1 otherwise, 3 when no GPU was found.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out=${OUT:-$PWD/gpu_check_out}
bundle_arg=$root/carry/gpu-bundle.tar.xz
phases_arg=tests,sanitize,bench,step,user,resume
dry_run=0
# The kernel choices of --attention and --unfused-layers, as the options of train_step, electra
# pretrain, electra finetune, bench/table1_window.sh and bench/ablation.sh.
step_flags=() pretrain_sets=() finetune_sets=() table1_sets=() ablation_sets=()
while (($#)); do
  case $1 in
    --bundle) bundle_arg=${2:?--bundle needs a value}; shift 2 ;;
    --phases) phases_arg=${2:?--phases needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --attention)
      attention=${2:?--attention needs a value}
      [[ $attention =~ ^(auto|unfused|flash|flash_ds|flash_short)$ ]] || {
        echo "gpu_check.sh: --attention '$attention' is none of auto, unfused, flash, flash_ds, flash_short" >&2
        exit 2
      }
      step_flags+=(--attention "$attention")
      pretrain_sets+=(--set "model.attention=$attention")
      finetune_sets+=(--set "finetune.attention=$attention")
      table1_sets+=(--pretrain-set "model.attention=$attention"
        --finetune-set "finetune.attention=$attention")
      ablation_sets+=(--set "model.attention=$attention"
        --finetune-set "finetune.attention=$attention")
      shift 2 ;;
    --unfused-layers)
      step_flags+=(--no-fused-layers)
      pretrain_sets+=(--set model.fused_layers=false)
      table1_sets+=(--pretrain-set model.fused_layers=false)
      ablation_sets+=(--set model.fused_layers=false)
      shift ;;
    *) echo "gpu_check.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
declare -A budget=([tests]=100 [sanitize]=150 [bench]=240 [step]=170 [user]=195 [resume]=75
  [table1]=570 [ablation]=570 [kernels]=90)
IFS=, read -r -a phases <<<"$phases_arg"
for phase in "${phases[@]}"; do
  [[ -n ${budget[$phase]:-} ]] || {
    echo "gpu_check.sh: unknown phase '$phase' (tests, sanitize, bench, step, user, resume, table1, ablation, kernels)" >&2
    exit 2
  }
  override=GPU_CHECK_BUDGET_${phase^^}
  [[ -n ${!override:-} ]] && budget[$phase]=${!override}
done

work=${GPU_CHECK_WORK:-${TMPDIR:-/tmp}/electra-gpu-check}
logs=$work/logs
mkdir -p "$out" "$logs"
steps=$work/steps.tsv
touch "$steps"
cd "$root" || exit 2

export steps logs
# record, left, bin, step, interrupted: the steps every phase is made of.
source "$root/scripts/gpu_check_steps.sh"

publish() {
  python3 "$root/scripts/gpu_summary.py" "$work" >"$work/summary.md" 2>"$work/summary.err" ||
    echo "gpu_check.sh: the summary failed: $(tail -1 "$work/summary.err")" >&2
  cp "$work/summary.md" "$steps" "$out/" 2>/dev/null
  [[ -f $work/profile.txt ]] && cp "$work/profile.txt" "$out/"
  [[ -f $work/table1/row.md ]] && cp "$work/table1/row.md" "$out/"
  [[ -f $work/ablation/table.md ]] && cp "$work/ablation/table.md" "$out/ablation.md"
  [[ -f $work/kernels.csv ]] && cp "$work/kernels.csv" "$out/"
  tar -C "$work" -czf "$out/logs.tar.gz" logs 2>/dev/null
}

# ---- What this machine has -------------------------------------------------------------------
why_no_gpu=""
if ! command -v nvidia-smi >/dev/null; then
  why_no_gpu="no GPU (nvidia-smi not found)"
elif ! nvidia-smi -L >"$logs/nvidia-smi.txt" 2>&1; then
  why_no_gpu="no GPU (nvidia-smi -L: $(head -1 "$logs/nvidia-smi.txt" | cut -c1-80))"
else
  nvidia-smi >>"$logs/nvidia-smi.txt" 2>&1
fi
[[ -n $why_no_gpu ]] && echo "$why_no_gpu" >"$logs/nvidia-smi.txt"

why_no_bundle=""
if [[ -d $bundle_arg ]]; then
  bundle=$(cd "$bundle_arg" && pwd)
elif [[ -f $bundle_arg ]]; then
  bundle=$work/bundle
  stamp=$(stat -c '%s %Y' "$bundle_arg")
  if [[ ! -f $bundle/.stamp || $(cat "$bundle/.stamp") != "$stamp" ]]; then
    rm -rf "$bundle" && mkdir -p "$bundle"
    if tar -C "$bundle" -xJf "$bundle_arg" 2>"$logs/unpack.log"; then
      echo "$stamp" >"$bundle/.stamp"
    else
      why_no_bundle="the bundle $bundle_arg does not unpack: $(tail -1 "$logs/unpack.log")"
    fi
  fi
else
  why_no_bundle="no bundle at $bundle_arg (scripts/gpu_bundle.sh builds it on a development machine)"
fi
[[ -z $why_no_bundle && ! -d ${bundle:-}/bin ]] && why_no_bundle="the bundle has no bin/ folder"
[[ -z $why_no_bundle && -f $bundle/MANIFEST ]] && cp "$bundle/MANIFEST" "$logs/MANIFEST"

# Our binaries find the libraries the bundle carries, then CUDA's from the device's python
# packages or toolkit; python's own processes keep their environment (torch ships its own).
cuda_libs=""
for dir in "${bundle:-/nonexistent}/lib" /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib \
  /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/local/cuda/lib64 \
  /usr/local/cuda-*/targets/x86_64-linux/lib; do
  [[ -d $dir ]] && cuda_libs+="${cuda_libs:+:}$dir"
done
export GPU_CHECK_LIBS=$cuda_libs bundle=${bundle:-}
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)


# ---- Phases ----------------------------------------------------------------------------------
phase_tests() {
  local deadline=$1
  ((dry_run)) || export ELECTRA_EXPECT_GPU=1
  local tests
  tests=$(cd "$bundle/bin" && ls -- *_gpu_test 2>/dev/null)
  [[ -n $tests ]] || { record tests all "not run: the bundle has no *_gpu_test" 0; return 1; }
  # shellcheck disable=SC2016
  printf '%s\n' $tests | xargs -P 4 -I{} bash -c 'step tests "$1" "$2" 120 bin "$1"' _ {} "$deadline"
  # A skip (exit 77) counts as a pass only in a dry run, where there is no GPU to use.
  ! awk -F'\t' -v dry="$dry_run" '$1 == "tests" && $3 != 0 && !(dry && $3 == 77) {bad = 1}
    END {exit !bad}' "$steps"
}

# The small-shape cases that racecheck and synccheck can finish in the budget (at the Small
# shapes attention's racecheck did not end in 90 s): BINARY|CATCH2 TEST-CASE FILTER (one entry
# per binary: the step is named after it). Attention: both versions at T = 37 (d = 32), flash's
# partial tiles at T = 77 (d = 64) and T = 129 (d = 128), f32 and bf16, dropout 0.1 and 0, and
# kFlashShort's forward and one-pass backward (one block per head; the backward's 161 KB of shared
# memory a block) at T = 77, one head
# (test/kernels/attention_cases.cpp; Catch2 wildcards go only at a pattern's ends). The kernels
# that share memory between warps besides: bias-GELU's row groups (uneven shares at 40000 x 64),
# and the fused generator kernels (cp.async weights, warp sums, tickets) at 300 rows, p 0 and 0.1.
hazard_cases=(
  "attention_gpu_test|*_3x37x64_h2_*,*flash_3x77x128_h2_*,*flash_2x129x256_h2_*,*flash_short_3x77x64_h1_*"
  "layernorm_gpu_test|layernorm/33x100/*"
  "softmax_xent_gpu_test|softmax_xent/5x97_stride100/*"
  "embedding_gpu_test|embedding/4x128x64_V1/*"
  "gelu_gpu_test|bias_gelu/40000x64/*"
  "ffn_forward_gpu_test|ffn_forward/300x*"
  "ffn_backward_gpu_test|ffn_backward/300x*"
  "output_layernorm_gpu_test|output_layernorm/300x*"
)
phase_sanitize() {
  local deadline=$1
  [[ -n $sanitizer ]] || { record sanitize all "not run: compute-sanitizer not found" 0; return 1; }
  export sanitizer ELECTRA_EXPECT_GPU=1
  local jobs=()
  for entry in "${hazard_cases[@]}"; do
    local test=${entry%%|*}
    if [[ ! -x $bundle/bin/$test ]]; then
      record sanitize "racecheck-$test" "not run: $test is not in the bundle" 0
      continue
    fi
    jobs+=("racecheck|$entry" "synccheck|$entry")
  done
  for test in $(cd "$bundle/bin" && ls -- *_gpu_test); do jobs+=("memcheck|$test|"); done
  # NCCL's communicator set-up probes its kernels with cudaFuncGetAttributes and handles the
  # "no kernel image" answers for other architectures itself (ncclInitKernelsForDevice: 16 such
  # API errors on the 2026-11-27 H100 run, all inside libnccl): memcheck checks nccl_gpu_test's
  # memory accesses, not NCCL's API probing. Our own CUDA calls are checked by the code itself.
  # shellcheck disable=SC2016
  printf '%s\n' "${jobs[@]}" | xargs -P 4 -d '\n' -I{} bash -c '
    IFS="|" read -r tool test filter <<<"$1"
    api=()
    [[ $test == nccl_gpu_test ]] && api=(--report-api-errors no)
    LD_LIBRARY_PATH="$GPU_CHECK_LIBS" step sanitize "$tool-$test" "$2" 150 \
      "$sanitizer" --tool "$tool" "${api[@]}" --error-exitcode 99 "$bundle/bin/$test" \
      ${filter:+"$filter"}
  ' _ {} "$deadline"
  ! awk -F'\t' '$1 == "sanitize" && $3 != 0 {bad = 1} END {exit !bad}' "$steps"
}

phase_bench() {
  local deadline=$1 rc=0 have_torch=0
  python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null &&
    have_torch=1
  for bench in "$bundle"/bin/*_bench; do
    [[ -x $bench ]] || continue
    step bench "$(basename "$bench")" "$deadline" 120 bin "$(basename "$bench")" || rc=1
    [[ $(basename "$bench") == attention_bench ]] || continue
    if ((have_torch)); then
      step bench attention_sdpa_baseline "$deadline" 120 python3 bench/attention_sdpa_baseline.py ||
        rc=1
    else
      record bench attention_sdpa_baseline "not run: python3 has no PyTorch with CUDA" 0
    fi
  done
  return $rc
}

phase_step() {
  local deadline=$1 rc=0 model seq batch
  local have_torch=0
  python3 -c "import torch, transformers, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    2>/dev/null && have_torch=1
  # Ours on every shape and the profile first, the HF baselines after: torch.compile alone takes
  # about 90 s a shape (on the 2026-11-27 H100 run the baselines of the first shapes spent the
  # phase's budget before Base 512 and the profile had run).
  local shapes=("small 128 128" "base 128 128" "base 512 32")
  for shape in "${shapes[@]}"; do
    read -r model seq batch <<<"$shape"
    step step "${model}${seq}_ours" "$deadline" 90 bin train_step --model "$model" --device cuda \
      --precision bf16 --seq-len "$seq" --batch "$batch" --warmup 5 --repeats 50 \
      "${step_flags[@]}" || rc=1
  done
  # The same Small update with each variant train_step leaves off: model.attention flash_ds (the
  # flash backward taking dQ from a GEMM on its stored dS; off by default, measured no faster),
  # flash_short (one block per head at T <= 128, d = 64, both directions; what auto picks there
  # since the 2026-11-28 run, so this row checks that auto row) and train.overlap_generator (the
  # generator's backward on a second stream; electra pretrain's configs turn it on). NAME FLAGS...
  local variant name flags
  for variant in "flash_ds --attention flash_ds" "flash_short --attention flash_short" \
    "overlap --overlap-generator"; do
    read -r name flags <<<"$variant"
    # shellcheck disable=SC2086  # FLAGS are words, after step_flags: a variant's attention wins
    step step "small128_ours_$name" "$deadline" 90 bin train_step --model small --device cuda \
      --precision bf16 --seq-len 128 --batch 128 --warmup 5 --repeats 50 "${step_flags[@]}" \
      $flags || rc=1
  done
  if step step profile_small "$deadline" 60 bin train_step --model small --device cuda \
    --precision bf16 --seq-len 128 --batch 128 --profile "${step_flags[@]}"; then
    cp "$logs/step/profile_small.log" "$work/profile.txt"
  else
    rc=1
  fi
  # The HF baselines of the shapes GPU_CHECK_HF_SHAPES names (default all three; torch.compile
  # alone took 95 s at Small on the 2026-11-28 H200, so a window that needs Base's baselines names
  # them alone: GPU_CHECK_HF_SHAPES="base128").
  local hf_shapes=${GPU_CHECK_HF_SHAPES:-small128 base128 base512}
  for shape in "${shapes[@]}"; do
    read -r model seq batch <<<"$shape"
    local name=${model}${seq} why=""
    if [[ " $hf_shapes " != *" $name "* ]]; then
      why="not in GPU_CHECK_HF_SHAPES ($hf_shapes)"
    elif ((!have_torch)); then
      why="python3 has no torch + transformers with CUDA"
    fi
    for impl in eager compile; do
      if [[ -n $why ]]; then
        record step "${name}_hf_$impl" "not run: $why" 0
        continue
      fi
      step step "${name}_hf_$impl" "$deadline" 150 python3 bench/step_pytorch.py --model "$model" \
        --device cuda --bf16 $([[ $impl == compile ]] && echo --compile) --seq-len "$seq" \
        --batch "$batch" --warmup 5 --repeats 50 || rc=1
    done
  done
  return $rc
}

# small_run DIR: sets `small` to the pre-training arguments of the user and resume phases,
# ELECTRA-Small on the bundle's data, writing checkpoints to DIR.
small_run() {
  small=(--config configs/electra-small.yaml --set "data.shards=$work/shards"
    --set "data.vocab=$bundle/data/vocab/bert-base-uncased-vocab.txt" --set "checkpoint.dir=$1"
    "${pretrain_sets[@]}")
}

build_shards() {  # build_shards DEADLINE: the bundle's corpus as seq-128 shards, once per machine
  [[ -f $work/shards/.done ]] && return 0
  rm -rf "$work/shards"
  step user build_data "$1" 120 bin electra build-data --input "$bundle/data/corpus" \
    --vocab "$bundle/data/vocab/bert-base-uncased-vocab.txt" --output "$work/shards" \
    --seq-len 128 && touch "$work/shards/.done"
}

# has_text_and_glue PHASE [HOW]: whether the bundle carries a corpus and the GLUE tasks; if not,
# records PHASE as not run, naming the gpu_bundle.sh option HOW (default --data) that packs them.
has_text_and_glue() {
  [[ -d $bundle/data/corpus && -d $bundle/data/glue ]] && return 0
  record "$1" all "not run: the bundle carries no corpus or GLUE data (gpu_bundle.sh ${2:---data})" 0
  return 1
}

phase_user() {
  local deadline=$1 rc=0
  has_text_and_glue user || return 1
  build_shards "$deadline" || return 1
  rm -rf "$work/user"
  small_run "$work/user"
  interrupted user pretrain "$deadline" "${GPU_CHECK_PRETRAIN_S:-45}" "${small[@]}" \
    --set logging.every=100 || rc=1
  interrupted user resume "$deadline" "${GPU_CHECK_RESUME_S:-20}" "${small[@]}" \
    --set logging.every=100 --resume "$work/user" || rc=1
  # The same run from the start with the generator's backward serial (train.overlap_generator
  # off; the configs turn it on): the graph replay's throughput without the overlap, beside the
  # pretrain step's.
  small_run "$work/user_serial"
  interrupted user pretrain_serial "$deadline" "${GPU_CHECK_SERIAL_S:-25}" "${small[@]}" \
    --set logging.every=100 --set train.overlap_generator=false || rc=1
  small_run "$work/user"
  for task in CoLA SST-2 MRPC STS-B RTE; do
    step user "finetune_$task" "$deadline" 90 bin electra finetune --task "$task" \
      --data-dir "$bundle/data/glue/$task" --init "$work/user" --config configs/glue.yaml \
      --output "$work/finetune/$task" "${finetune_sets[@]}" || rc=1
  done
  return $rc
}

phase_resume() {
  local deadline=$1 n=${GPU_CHECK_RESUME_UPDATES:-400} rc=0
  [[ -d $bundle/data/corpus ]] || {
    record resume all "not run: the bundle carries no corpus (gpu_bundle.sh --data)" 0
    return 1
  }
  build_shards "$deadline" || return 1
  rm -rf "$work/resume"
  local run=(--set "train.steps=$n" --set checkpoint.every=0 --set logging.every=50)
  local last
  last=$(printf 'checkpoint-%08d' "$n")
  small_run "$work/resume/a"
  step resume straight "$deadline" 60 bin electra pretrain "${small[@]}" "${run[@]}" || return 1
  small_run "$work/resume/b"
  step resume straight_again "$deadline" 60 bin electra pretrain "${small[@]}" "${run[@]}" ||
    return 1
  # Interrupted once the progress line of update n/4 is out, so the stop falls before n.
  small_run "$work/resume/c"
  interrupted resume interrupted "$deadline" "step $((n / 4))" "${small[@]}" "${run[@]}" ||
    return 1
  step resume resumed "$deadline" 60 bin electra pretrain "${small[@]}" "${run[@]}" \
    --resume "$work/resume/c" || return 1
  step resume same_bytes_twice "$deadline" 30 python3 scripts/checkpoint_diff.py \
    "$work/resume/a/$last" "$work/resume/b/$last" || rc=1
  step resume same_bytes_resumed "$deadline" 30 python3 scripts/checkpoint_diff.py \
    "$work/resume/a/$last" "$work/resume/c/$last" || rc=1
  return $rc
}

phase_table1() {
  local deadline=$1
  has_text_and_glue table1 "--data both" || return 1
  # table1_window.sh keeps its own budget (a run cut at it saves and exits 75, and the same
  # command resumes it); the step's limit is only the backstop.
  local budget_s=$(($(left "$deadline") - 15))
  LD_LIBRARY_PATH="$GPU_CHECK_LIBS" ELECTRA_BIN="$bundle/bin/electra" step table1 window \
    "$deadline" "$((budget_s + 10))" bash bench/table1_window.sh --budget-s "$budget_s" \
    --data "$bundle/data" --out "$work/table1" --seeds "${GPU_CHECK_TABLE1_SEEDS:-3}" \
    "${table1_sets[@]}"
}

phase_ablation() {
  local deadline=$1
  has_text_and_glue ablation || return 1
  # ablation.sh is cut by SIGINT at the phase's budget (its pretrain saves a checkpoint, the
  # script exits 75) and continues from there when the phase runs again with the same work folder.
  local budget_s=$(($(left "$deadline") - 15))
  LD_LIBRARY_PATH="$GPU_CHECK_LIBS" ELECTRA_BIN="$bundle/bin/electra" step ablation table5 \
    "$deadline" "$((budget_s + 15))" timeout --preserve-status -s INT -k 10 "$budget_s" \
    bash bench/ablation.sh --size small \
    --budget-s "${GPU_CHECK_ABLATION_ROW_S:-30}" --data "$bundle/data" \
    --vocab "$bundle/data/vocab/bert-base-uncased-vocab.txt" --tasks "CoLA SST-2 MRPC STS-B RTE" \
    --seeds "${GPU_CHECK_ABLATION_SEEDS:-2}" --max-train 8000 --epochs 3 --ft-seq-len 128 \
    --out "$work/ablation" "${ablation_sets[@]}"
}

phase_kernels() {
  local deadline=$1 ncu
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null |
    head -1)
  [[ -n $ncu ]] || {
    record kernels all "not run: no ncu (Nsight Compute) on this machine" 0
    return 1
  }
  # 250 launches: the first update's 210 kernels (docs/KERNELS.md, "Profile and launch count")
  # and the start of the second; each is replayed once per metric pass (about 0.1 s a launch).
  # The clocks as they are (--clock-control none, as the device notes advise for these VMs): on
  # the 2026-11-28 H200 ncu with its default clock control failed the first kernel it profiled and
  # wrote no rows (the cause not established).
  rm -f "$work/kernels.csv"
  step kernels ncu_small "$deadline" 85 env LD_LIBRARY_PATH="$GPU_CHECK_LIBS" "$ncu" \
    --clock-control none \
    --target-processes all --kernel-name-base function --kernel-name regex:_kernel \
    --launch-count 250 --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --csv --page details --log-file "$work/kernels.csv" "$bundle/bin/train_step" --model small \
    --device cuda --precision bf16 --seq-len 128 --batch 128 --warmup 1 --repeats 1
}

# ---- Run -------------------------------------------------------------------------------------
status=0
for phase in "${phases[@]}"; do
  why=$why_no_bundle
  # Every phase needs the GPU, except that a dry run runs the tests phase to see them skip.
  if [[ -z $why && -n $why_no_gpu ]] && ! ((dry_run)) && [[ $phase == tests ]] || \
    [[ -z $why && -n $why_no_gpu && $phase != tests ]]; then
    why=$why_no_gpu
  fi
  if [[ -n $why ]]; then
    record "$phase" all "not run: $why" 0
    echo "gpu_check.sh: $phase: not run: $why" >&2
    status=1
  else
    echo "gpu_check.sh: $phase (budget ${budget[$phase]} s)" >&2
    "phase_$phase" $(($(date +%s) + budget[$phase])) || status=1
  fi
  publish
done
[[ -n $why_no_gpu ]] && status=3
cat "$work/summary.md"
exit $status
