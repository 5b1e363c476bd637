#!/usr/bin/env bash
# scripts/gpu_check.sh on a machine without a GPU, its summary parser on recorded logs, and
# scripts/checkpoint_diff.py:
#   1. a dry run from a bundle folder of GPU test executables: each test runs and reports its skip,
#      every other phase says it did not run for want of a GPU, exit 3, at most 8 files in $OUT;
#   2. without a bundle every phase says where the bundle should be (the default six; table1 and
#      kernels, outside the default list, too); a bad phase is exit 2;
#   3. gpu_summary.py on logs in the first GPU run's formats (../shared/gpu-runs/2026-11-26-h100):
#      a failing test with its largest error, benchmark ratios, the update against HF, the user's
#      path, a sanitizer line;
#   4. checkpoint_diff.py: identical, one differing element named, a truncated file;
#   5. check_symbol_versions.sh (gpu_bundle.sh's check against the device's glibc and libstdc++);
#   6. each sanitizer case filter of gpu_check.sh (hazard_cases) whose executable is given selects
#      at least one test (a renamed case would otherwise leave racecheck with nothing to run);
#   7. `interrupted` (scripts/gpu_check_steps.sh) delivers its SIGINT to the binary itself, on a
#      stand-in electra that reports the signal (the first version signalled a subshell that
#      ignored it, and the user and resume phases failed on the 2026-11-27 H100 run), and again
#      when the first came before the binary's handler;
#   8. --attention and --unfused-layers reach every run of the step and user phases (train_step's
#      own rows and profile, pretrain, finetune) and the pre-training of the table1 and ablation
#      phases, whose scripts accept every option the phases give them, on stand-in binaries and a
#      stand-in nvidia-smi; an unknown attention is exit 2; GPU_CHECK_HF_SHAPES limits the step
#      phase's HF baselines to the shapes it names.
# Usage: gpu_check_test.sh SOURCE_DIR GPU_TEST_EXECUTABLE...
set -uo pipefail
src=$1
shift
electra=unused
source "$src/test/common/e2e_common.sh"

if nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: this machine has a GPU; the dry run is for machines without one"
  exit 77
fi

# 1. Dry run.
mkdir -p "$work/bundle/bin"
for exe in "$@"; do ln -s "$exe" "$work/bundle/bin/$(basename "$exe")"; done
echo "commit test" >"$work/bundle/MANIFEST"
GPU_CHECK_WORK="$work/w1" bash "$src/scripts/gpu_check.sh" --bundle "$work/bundle" \
  --out "$work/out1" --dry-run >"$work/dry.log" 2>&1
rc=$?
[[ $rc -eq 3 ]] && pass "dry run exits 3 (no GPU)" || fail "dry run exit $rc: $(tail -3 "$work/dry.log")"
summary=$work/out1/summary.md
[[ -f $summary ]] || fail "no summary.md in \$OUT"
(($(ls "$work/out1" | wc -l) <= 8)) || fail "more than 8 files in \$OUT: $(ls "$work/out1")"
# The listing is read whole: `tar | grep -q` would fail under pipefail when grep exits first.
listing=$(tar -tzf "$work/out1/logs.tar.gz" 2>&1)
[[ $listing == *logs/tests/* ]] ||
  fail "logs.tar.gz lacks the tests' logs"
before=$failures
for exe in "$@"; do
  name=$(basename "$exe")
  grep -q "^| $name | skipped | .* | skipped: " "$summary" || fail "summary row of $name"
done
grep -q "^## GPU tests: 0 of $# passed" "$summary" || fail "GPU tests heading"
for phase in sanitize bench step user resume; do
  grep -q "^- $phase all: no GPU (nvidia-smi" "$summary" || fail "phase $phase does not say why"
done
((failures == before)) &&
  pass "dry run: every test skipped with its reason, every other phase says why it did not run"

# 2. No bundle; bad arguments.
GPU_CHECK_WORK="$work/w2" bash "$src/scripts/gpu_check.sh" --bundle "$work/none.tar.xz" \
  --out "$work/out2" >/dev/null 2>&1
rc=$?
((rc != 0)) || fail "no bundle: exit 0"
n=$(grep -c "^- .* all: no bundle at $work/none.tar.xz (scripts/gpu_bundle.sh" "$work/out2/summary.md")
[[ $n -eq 6 ]] && pass "no bundle: all 6 phases say where it should be" || fail "no bundle: $n phases"
bash "$src/scripts/gpu_check.sh" --phases tests,nope >"$work/bad.log" 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q "unknown phase 'nope'" "$work/bad.log" && pass "a bad phase: exit 2" ||
  fail "a bad phase: exit $rc, $(cat "$work/bad.log")"
# The phases outside the default list are accepted and say why they did not run.
GPU_CHECK_WORK="$work/w2b" bash "$src/scripts/gpu_check.sh" --bundle "$work/none.tar.xz" \
  --phases table1,ablation,kernels --out "$work/out2b" >/dev/null 2>&1
n=$(grep -cE "^- (table1|ablation|kernels) all: no bundle at" "$work/out2b/summary.md")
[[ $n -eq 3 ]] && pass "table1, ablation and kernels: accepted, each says why it did not run" ||
  fail "table1, ablation and kernels: $n of 3 phases say why"

# 3. The summary parser on recorded logs.
w=$work/rec
mkdir -p "$w/logs/tests" "$w/logs/bench" "$w/logs/step" "$w/logs/user" "$w/logs/sanitize"
echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)" >"$w/logs/nvidia-smi.txt"
printf '%s\n' tests$'\t'disc_head_gpu_test$'\t'1$'\t'1 tests$'\t'cast_gpu_test$'\t'0$'\t'2 \
  tests$'\t'attention_gpu_test$'\t'1$'\t'5 \
  tests$'\t'gelu_gpu_test$'\t'77$'\t'0 sanitize$'\t'memcheck-cast_gpu_test$'\t'0$'\t'3 \
  bench$'\t'cast_bench$'\t'0$'\t'4 bench$'\t'matmul_bench$'\t'1$'\t'2 \
  step$'\t'small128_ours$'\t'0$'\t'9 step$'\t'small128_ours_flash_ds$'\t'0$'\t'9 \
  step$'\t'small128_ours_flash_short$'\t'0$'\t'9 step$'\t'small128_ours_overlap$'\t'0$'\t'9 \
  step$'\t'small128_hf_eager$'\t'0$'\t'30 \
  step$'\t'small128_hf_compile$'\t'0$'\t'70 user$'\t'pretrain$'\t'0$'\t'50 \
  user$'\t'pretrain_serial$'\t'0$'\t'25 \
  user$'\t'finetune_MRPC$'\t'0$'\t'6 resume$'\t'all$'\t'"not run: the phase's budget was spent"$'\t'0 \
  ablation$'\t'table5$'\t'75$'\t'561 \
  >"$w/steps.tsv"
cat >"$w/logs/tests/disc_head_gpu_test.log" <<'EOF'
running on NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)
PROJECT/test/kernels/disc_head_gpu_test.cpp:56: FAILED:
  CHECK( test::max_relative_error(test::download_f32(gpu, d_dz), dz) < tol )
with expansion:
  0.000048088 < 0.00001
test cases:  1 |  0 passed | 1 failed
assertions: 18 | 17 passed | 1 failed

largest error: 4.809e-05 against a bound of 1e-05 (4.809 of the bound; 9 compared) in disc_head on the GPU matches the CPU at test/kernels/disc_head_gpu_test.cpp:56
EOF
# An op harness case's failures as Catch2 prints them, the first message wrapped.
cat >"$w/logs/tests/attention_gpu_test.log" <<'EOF'
running on NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)
-------------------------------------------------------------------------------
attention/flash_small_p0.1/bf16
-------------------------------------------------------------------------------
PROJECT/test/common/op_harness.cpp:74
...............................................................................

PROJECT/test/common/op_harness.cpp:34: FAILED:
explicitly with message:
  dqkv: dK normwise 0.5 >= 0.02; ; 64 of 768 elements have an error of at least
  1/4 of the largest, 1 at [1, 8, 4] (got 1.5, want 0.5); dim 2 (12): 4-7

PROJECT/test/common/op_harness.cpp:34: FAILED:
explicitly with message:
  out: relative error 0.1 >= 0.02

test cases: 2 | 1 passed | 1 failed
assertions: 9 | 7 passed | 2 failed
EOF
printf 'running on NVIDIA H100\nAll tests passed (40 assertions in 2 test cases)\n' \
  >"$w/logs/tests/cast_gpu_test.log"
echo "skipped: no CUDA device" >"$w/logs/tests/gelu_gpu_test.log"
echo "========= ERROR SUMMARY: 0 errors" >"$w/logs/sanitize/memcheck-cast_gpu_test.log"
cat >"$w/logs/bench/cast_bench.log" <<'EOF'
RESULT op=cast_f32_bf16 shape=110M impl=baseline_naive ms=0.3285 gbps=2008.9 tflops=0.00 roofline_pct=66.8
RESULT op=cast_f32_bf16 shape=110M impl=ours ms=0.2203 gbps=2995.6 tflops=0.00 roofline_pct=99.7
EOF
echo "validate small_qkv: max rel err 0.587 FAILED" >"$w/logs/bench/matmul_bench.log"
echo "RESULT impl=electra model=small device=cuda precision=bf16 batch=128 seq=128 threads=1 median_ms=19.02 min_ms=18.9 seq_per_s=6729.8" \
  >"$w/logs/step/small128_ours.log"
echo "RESULT impl=electra model=small device=cuda attention=flash_ds precision=bf16 batch=128 seq=128 threads=1 median_ms=18.40 min_ms=18.3 seq_per_s=6956.5" \
  >"$w/logs/step/small128_ours_flash_ds.log"
echo "RESULT impl=electra model=small device=cuda attention=flash_short overlap_generator=0 precision=bf16 batch=128 seq=128 threads=1 median_ms=17.20 min_ms=17.1 seq_per_s=7441.9" \
  >"$w/logs/step/small128_ours_flash_short.log"
echo "RESULT impl=electra model=small device=cuda attention=auto overlap_generator=1 precision=bf16 batch=128 seq=128 threads=1 median_ms=16.90 min_ms=16.8 seq_per_s=7573.9" \
  >"$w/logs/step/small128_ours_overlap.log"
echo "RESULT impl=pytorch model=small device=cuda precision=bf16 batch=128 seq=128 threads=1 median_ms=88.59 min_ms=88 seq_per_s=1444.8" \
  >"$w/logs/step/small128_hf_eager.log"
echo "RESULT impl=pytorch-compile model=small device=cuda precision=bf16 batch=128 seq=128 threads=1 median_ms=49.39 min_ms=49 seq_per_s=2591.6" \
  >"$w/logs/step/small128_hf_compile.log"
cat >"$w/logs/user/pretrain.log" <<'EOF'
step 100/200000 | gen loss 8.8933 acc 0.216 | disc loss 0.2494 acc 0.883 | replaced 0.148 | lr 4.948e-05 | grad norm 8.013 | 6539.2 seq/s 837016 tok/s | 65.99 TFLOP/s (MFU 6.7%) | ETA 1h05m
step 200/200000 | gen loss 7.3774 acc 0.224 | disc loss 0.2589 acc 0.890 | replaced 0.148 | lr 9.940e-05 | grad norm 9.768 | 7490.1 seq/s 958730 tok/s | 75.58 TFLOP/s (MFU 7.6%) | ETA 56m54s
pretrain: SIGINT received at update 212; saving a checkpoint
EOF
cat >"$w/logs/user/pretrain_serial.log" <<'EOF'
step 100/200000 | gen loss 8.8933 acc 0.216 | disc loss 0.2494 acc 0.883 | replaced 0.148 | lr 4.948e-05 | grad norm 8.013 | 6701.0 seq/s 857728 tok/s | 67.62 TFLOP/s (MFU 6.8%) | ETA 1h04m
pretrain: SIGINT received at update 150; saving a checkpoint
EOF
echo "MRPC seed 1: best epoch 2: f1 0.8259, accuracy 0.7304 (6 s)" >"$w/logs/user/finetune_MRPC.log"
mkdir -p "$w/logs/ablation" "$w/ablation"
echo "[01:02:03] replace-mlm: stopped before update 2100: run the same command again" \
  >"$w/logs/ablation/table5.log"
printf '| row | updates |\n| --- | --- |\n| electra | 2000 |\n' >"$w/ablation/table.md"
python3 "$src/scripts/gpu_summary.py" "$w" >"$work/rec.md" 2>&1 || fail "gpu_summary.py: $(tail -2 "$work/rec.md")"
expect_line() {  # expect_line WHAT FIXED-STRING
  grep -qF -- "$2" "$work/rec.md" && pass "summary: $1" || { fail "summary: $1: no line '$2'"; cat "$work/rec.md"; }
}
expect_line "GPU" "- GPU: GPU 0: NVIDIA H100 80GB HBM3"
expect_line "tests heading" "## GPU tests: 1 of 4 passed"
expect_line "the fallback a failed flash test points to" "- attention_gpu_test failed: run the later phases again with \`--attention unfused\`"
expect_line "failed cases heading" "### Failed test cases (1; the first failure of each)"
expect_line "a failed harness case, its wrapped message joined" "| attention_gpu_test | attention/flash_small_p0.1/bf16 | dqkv: dK normwise 0.5 >= 0.02; ; 64 of 768 elements have an error of at least 1/4 of the largest, 1 at [1, 8, 4] (got 1.5, want 0.5); dim 2 (12): 4-7 |"
expect_line "failing test" "| disc_head_gpu_test | FAILED (exit 1) | 1 s | 1 of 18 assertions failed; largest error 4.809e-05 = 4.809 of its bound 1e-05 (disc_head on the GPU matches the CPU at test/kernels/disc_head_gpu_test.cpp:56) |"
expect_line "a skip on a GPU machine" "| gelu_gpu_test | SKIPPED (a failure on a GPU machine) | 0 s | skipped: no CUDA device |"
expect_line "sanitizer" "| memcheck-cast_gpu_test | ok | 3 s | ERROR SUMMARY: 0 errors |"
expect_line "benchmark ratio" "| cast_f32_bf16 | 110M | 0.2203 | 99.7 | baseline_naive | 0.3285 | 1.49x |"
expect_line "benchmark failure" "| matmul_bench | FAILED (exit 1) | validate small_qkv: max rel err 0.587 FAILED |"
expect_line "update vs HF" "| small seq 128 batch 128 | 19.02 | 6729.8 | 18.40 | 17.20 | 16.90 | 88.59 | 49.39 | 4.66x | 2.60x |"
expect_line "pretrain" "| pretrain | ok | 50 s | step 200: 7490.1 seq/s, 75.58 TFLOP/s (MFU 7.6%); SIGINT saved a checkpoint |"
expect_line "pretrain with the serial backward" "| pretrain_serial | ok | 25 s | step 100: 6701.0 seq/s, 67.62 TFLOP/s (MFU 6.8%); SIGINT saved a checkpoint |"
expect_line "finetune" "| finetune_MRPC | ok | 6 s | best epoch 2: f1 0.8259, accuracy 0.7304 (6 s) |"
expect_line "a science run cut at its budget" "| ablation table5 | cut at its budget (the same phase again continues it) | 561 s | [01:02:03] replace-mlm: stopped before update 2100: run the same command again |"
expect_line "the Table 5 table" "| electra | 2000 |"
expect_line "not run" "- resume all: the phase's budget was spent"

# 4. checkpoint_diff.py.
python3 - "$work/ck" <<'PY'
import json, os, struct, sys
root = sys.argv[1]
def write(path, tensors):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    header, body = {}, b""
    for name, values in tensors:
        raw = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": [len(values)], "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + body)
a = [("w", [1.0, 2.0, 3.0]), ("b", [0.5])]
write(f"{root}/a/discriminator/model.safetensors", a)
write(f"{root}/b/discriminator/model.safetensors", a)
write(f"{root}/c/discriminator/model.safetensors", [("w", [1.0, 2.25, 3.0]), ("b", [0.5])])
with open(f"{root}/c/discriminator/model.safetensors", "rb") as f:
    data = f.read()
os.makedirs(f"{root}/d/discriminator")
with open(f"{root}/d/discriminator/model.safetensors", "wb") as f:
    f.write(data[:12])
PY
diff_says() {  # diff_says WHAT RC TEXT A B
  local said rc
  said=$(python3 "$src/scripts/checkpoint_diff.py" "$work/ck/$4" "$work/ck/$5")
  rc=$?
  [[ $rc -eq $2 && $said == *"$3"* ]] && pass "checkpoint_diff: $1" ||
    fail "checkpoint_diff: $1: exit $rc, '$said'"
}
diff_says "identical" 0 "identical: 1 files, 2 tensors" a b
diff_says "one element" 1 "tensor w (F32, 3 elements): 1 differ, largest absolute difference 0.25" a c
diff_says "truncated" 2 "header of" a d
diff_says "missing folder" 2 "no such folder" a nothing

# 5. check_symbol_versions.sh on a GPU test executable.
said=$("$src/scripts/check_symbol_versions.sh" 99.0 99.0 "$1" 2>&1)
[[ $? -eq 0 && $said =~ ^needs\ glibc\ 2\.[0-9]+,\ GLIBCXX_3\.4\.[0-9]+$ ]] &&
  pass "check_symbol_versions: $said" || fail "check_symbol_versions: '$said'"
said=$("$src/scripts/check_symbol_versions.sh" 2.0 99.0 "$1" 2>&1)
[[ $? -eq 1 && $said == *"$1 needs glibc 2."*"(at most 2.0)"* ]] &&
  pass "check_symbol_versions refuses a newer glibc" || fail "check_symbol_versions 2.0: '$said'"

# 6. The sanitizer's case filters, listed by the executables they name.
while IFS='|' read -r test filter; do
  for exe in "$@"; do
    [[ $(basename "$exe") == "$test" ]] || continue
    listed=$("$exe" --list-test-names-only "$filter" 2>&1 | grep -c /)
    ((listed > 0)) && pass "hazard filter of $test selects $listed tests" ||
      fail "hazard filter '$filter' of $test selects no test"
  done
done < <(sed -n '/^hazard_cases=(/,/^)/s/^  "\(.*\)"$/\1/p' "$src/scripts/gpu_check.sh")

# 7. interrupted, on a stand-in `electra pretrain` that prints a progress line every 0.1 s and
# saves and exits 0 on SIGINT, or exits 0 unsignalled after 20 s.
mkdir -p "$work/fake/bin"
cat >"$work/fake/bin/electra" <<'PY'
#!/usr/bin/env python3
import os, signal, sys, time
stop = []
# The handler after FAKE_HANDLER_DELAY seconds (a real run sets it up after its start-up work).
time.sleep(float(os.environ.get("FAKE_HANDLER_DELAY", "0")))
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
for update in range(1, 201):
    if stop:
        print(f"pretrain: SIGINT received at update {update - 1}; saving a checkpoint", file=sys.stderr)
        break
    print(f"step {update}/200 | ...", file=sys.stderr, flush=True)
    time.sleep(0.1)
PY
chmod +x "$work/fake/bin/electra"
(
  failures=0 steps=$work/fake/steps.tsv logs=$work/fake/logs bundle=$work/fake GPU_CHECK_LIBS=
  source "$src/scripts/gpu_check_steps.sh"
  start=$SECONDS
  interrupted user by_step $(($(date +%s) + 60)) "step 3" --config x
  rc=$?
  [[ $rc -eq 0 ]] && grep -q "SIGINT received at update [3-9]" "$logs/user/by_step.log" &&
    ((SECONDS - start < 15)) && pass "interrupted: SIGINT at update 3 reaches the binary" ||
    fail "interrupted 'step 3': exit $rc after $((SECONDS - start)) s: $(tail -1 "$logs/user/by_step.log")"
  interrupted user by_time $(($(date +%s) + 60)) 1 --config x
  rc=$?
  [[ $rc -eq 0 ]] && grep -q "SIGINT received" "$logs/user/by_time.log" &&
    pass "interrupted: SIGINT after 1 s reaches the binary" ||
    fail "interrupted after 1 s: exit $rc: $(tail -1 "$logs/user/by_time.log")"
  # Signalled at once, before the handler exists (the signal is ignored then): sent again.
  FAKE_HANDLER_DELAY=1.5 interrupted user early $(($(date +%s) + 60)) 0 --config x
  rc=$?
  [[ $rc -eq 0 ]] && grep -q "SIGINT received" "$logs/user/early.log" &&
    pass "interrupted: a SIGINT sent before the handler exists is sent again" ||
    fail "interrupted before the handler: exit $rc: $(tail -1 "$logs/user/early.log")"
  exit "$failures"
)
failures=$((failures + $?))

# 8. --attention, on a bundle of stand-ins that log their arguments: electra (build-data makes its
# --output, pretrain is section 7's except a --dry-run, which prints nothing, finetune passes),
# train_step (a RESULT line), nvidia-smi.
mkdir -p "$work/att/bin" "$work/att/data/corpus" "$work/att/path" "$work/att/data/vocab"
for task in CoLA SST-2 MRPC STS-B RTE; do
  mkdir -p "$work/att/data/glue/$task"
  touch "$work/att/data/glue/$task/train.tsv" "$work/att/data/glue/$task/dev.tsv"
done
echo "[PAD]" >"$work/att/data/vocab/bert-base-uncased-vocab.txt"
printf '#!/usr/bin/env bash\necho "GPU 0: stand-in"\n' >"$work/att/path/nvidia-smi"
cat >"$work/att/bin/electra" <<EOF
#!/usr/bin/env bash
echo "electra \$*" >>"$work/att/args"
case \$1 in
  build-data) while ((\$#)); do [[ \$1 == --output ]] && mkdir -p "\$2"; shift; done ;;
  pretrain) [[ " \$* " == *" --dry-run "* ]] || exec python3 "$work/fake/bin/electra" ;;
esac
exit 0
EOF
cat >"$work/att/bin/train_step" <<EOF
#!/usr/bin/env bash
echo "train_step \$*" >>"$work/att/args"
echo "RESULT impl=electra median_ms=1"
EOF
chmod +x "$work/att/bin/"* "$work/att/path/nvidia-smi"
PATH="$work/att/path:$PATH" GPU_CHECK_WORK="$work/w8" GPU_CHECK_PRETRAIN_S=1 \
  GPU_CHECK_RESUME_S=1 GPU_CHECK_SERIAL_S=1 bash "$src/scripts/gpu_check.sh" --bundle \
  "$work/att" --phases step,user --attention unfused --unfused-layers --out "$work/out8" \
  >"$work/att.log" 2>&1
runs() { grep -c -- "$1" "$work/att/args"; }
# 3 shapes, 3 variants and the profile; the flash_ds and flash_short rows name their own attention
# last (train_step takes the last --attention).
[[ $(runs "^train_step .*--attention unfused") -eq 7 && $(runs "^train_step ") -eq 7 &&
  $(runs "^train_step .*--no-fused-layers") -eq 7 &&
  $(runs "^train_step .*--attention unfused .*--attention flash_ds$") -eq 1 &&
  $(runs "^train_step .*--attention unfused .*--attention flash_short$") -eq 1 ]] &&
  pass "--attention, --unfused-layers: train_step's own rows and profile" ||
  fail "--attention: train_step: $(grep train_step "$work/att/args")"
[[ $(runs "^electra pretrain .*model.attention=unfused") -eq 3 &&
  $(runs "^electra pretrain .*model.fused_layers=false") -eq 3 &&
  $(runs "^electra pretrain") -eq 3 ]] && pass "--attention, --unfused-layers: every pretrain run" ||
  fail "--attention: pretrain: $(grep pretrain "$work/att/args"); $(tail -3 "$work/att.log")"
[[ $(runs "^electra finetune .*finetune.attention=unfused") -eq 5 ]] &&
  pass "--attention: every finetune run" || fail "--attention: finetune: $(grep finetune "$work/att/args")"
# GPU_CHECK_HF_SHAPES picks the shapes whose HF baselines the step phase times; the others are
# recorded as not run, saying why.
PATH="$work/att/path:$PATH" GPU_CHECK_WORK="$work/w8c" GPU_CHECK_HF_SHAPES=base128 \
  bash "$src/scripts/gpu_check.sh" --bundle "$work/att" --phases step --out "$work/out8c" \
  >"$work/hf_shapes.log" 2>&1
grep -q $'small128_hf_eager\tnot run: not in GPU_CHECK_HF_SHAPES (base128)' "$work/w8c/steps.tsv" &&
  grep -q $'base512_hf_eager\tnot run: not in GPU_CHECK_HF_SHAPES' "$work/w8c/steps.tsv" &&
  ! grep -q $'base128_hf_eager\tnot run: not in' "$work/w8c/steps.tsv" &&
  pass "GPU_CHECK_HF_SHAPES: only the named shapes' HF baselines" ||
  fail "GPU_CHECK_HF_SHAPES: $(grep _hf_ "$work/w8c/steps.tsv" 2>&1)"
# The table1 and ablation phases' options reach their scripts, which accept them and get as far
# as the stand-in's empty `pretrain --dry-run` (a refused option would stop them before), with
# the pre-training overrides.
: >"$work/att/args"
PATH="$work/att/path:$PATH" GPU_CHECK_WORK="$work/w8" bash "$src/scripts/gpu_check.sh" \
  --bundle "$work/att" --phases table1,ablation --attention unfused --unfused-layers \
  --out "$work/out8b" >"$work/att_science.log" 2>&1
for said in "table1/window:pretrain --dry-run printed no batch or FLOPs line" \
  "ablation/table5:pretrain --dry-run printed no FLOPs or batch line"; do
  log=$work/w8/logs/${said%%:*}.log
  grep -q "${said#*:}" "$log" && pass "${said%%/*} phase: its options reach its script" ||
    fail "${said%%/*} phase: $(tail -2 "$log")"
done
[[ $(runs "^electra pretrain .*model.attention=unfused.*model.fused_layers=false.* --dry-run") -eq 2 ]] &&
  pass "table1 and ablation phases: --attention and --unfused-layers reach pretrain" ||
  fail "table1 and ablation phases: pretrain: $(grep pretrain "$work/att/args")"
bash "$src/scripts/gpu_check.sh" --attention fast >"$work/bad_att.log" 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q "attention 'fast' is none of" "$work/bad_att.log" &&
  pass "--attention fast: exit 2" || fail "--attention fast: exit $rc, $(cat "$work/bad_att.log")"

echo "$failures failed"
((failures == 0))
