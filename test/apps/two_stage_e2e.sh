#!/usr/bin/env bash
# End-to-end two-stage pre-training (training: two-stage, docs/OBJECTIVES.md) on the CPU, tiny:
# 100 updates, the generator alone for 50 (its MLM loss falls, no discriminator loss), then the
# discriminator initialised from it (its loss falls; the frozen generator's weights are the same
# at update 100 as at update 50); the progress lines name the stage; a run stopped in stage 1, at
# the switch or in stage 2 and resumed equals the uninterrupted one bit for bit; `finetune --init`
# accepts the checkpoint; a generator smaller than the discriminator is one error line.
# Usage: two_stage_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
make_tiny_sst2

# A generator of the discriminator's size: multiplier 1, 1 head (= 64 / 64), FFN 256 (= 4 x 64).
small=("${tiny_pretrain[@]}" --set model.heads=1 --set model.generator_multiplier=1
  --set training=two-stage --set two_stage.generator_steps=50)

dir="$work/two-stage"
if "$electra" pretrain "${small[@]}" --set checkpoint.every=50 --set checkpoint.keep=0 \
  --set checkpoint.dir="$dir" >"$dir.log" 2>&1; then
  grep -q "^training: two-stage (updates 1-50" "$dir.log" || fail "the run does not say its training"
  grep -q "^stage 1 (generator) | step 50/100" "$dir.log" &&
    grep -q "^stage 2 (discriminator) | step 60/100" "$dir.log" ||
    fail "the progress lines do not name the stage"
  if python3 - "$dir" <<'PY'; then
import json, struct, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(run + "/metrics.jsonl")]
s1 = [r for r in rows if r["stage"] == 1]
s2 = [r for r in rows if r["stage"] == 2]
print(f"stage 1: gen_loss {s1[0]['gen_loss']:.3f} -> {s1[-1]['gen_loss']:.3f}; "
      f"stage 2: disc_loss {s2[0]['disc_loss']:.3f} -> {s2[-1]['disc_loss']:.3f}, "
      f"tflops {s1[-1]['tflops']:.3g} / {s2[-1]['tflops']:.3g}")
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}
# The generator's weights (its encoder, head and the shared embedding tables) are those of
# update 50, and the discriminator's embedding tables are those tables.
g50 = tensors(run + "/checkpoint-00000050/generator/model.safetensors")
g100 = tensors(run + "/checkpoint-00000100/generator/model.safetensors")
d100 = tensors(run + "/checkpoint-00000100/discriminator/model.safetensors")
word = "electra.embeddings.word_embeddings.weight"
frozen = len(g50) > 10 and all(g50[k] == g100[k] for k in g50) and d100[word] == g50[word]
ok = (len(s1) == 5 and len(s2) == 5 and all(r["disc_loss"] == 0 for r in s1)
      and s1[-1]["gen_loss"] < 0.85 * s1[0]["gen_loss"]
      and s2[-1]["disc_loss"] < s2[0]["disc_loss"] - 0.02 and frozen)
sys.exit(0 if ok else 1)
PY
    pass "stage 1: the generator loss falls; stage 2: the discriminator loss falls, the generator is frozen"
  else
    fail "losses or freezing wrong"
  fi
  ckpt="$dir/checkpoint-00000100"
  # Stopped in stage 1 (30), exactly at the switch (50: the resumed run switches) and in stage 2
  # (70): each resumed run equals the uninterrupted one.
  for stop in 30 50 70; do
    resume_stop_after=$stop expect_resume_identical "stop-$stop" "$ckpt" \
      "discriminator generator" "${small[@]}"
  done
  if "$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$dir" \
    --set finetune.device=cpu --set finetune.max_seq_len=16 --set finetune.batch_size=16 \
    --set finetune.epochs=1 --output "$work/ft" >"$work/ft.log" 2>&1; then
    pass "finetune --init accepts the checkpoint"
  else
    fail "finetune --init: $(tail -3 "$work/ft.log")"
  fi
else
  fail "pretrain exited: $(tail -3 "$dir.log")"
fi

# --dry-run states each stage's FLOPs: stage 1 (the generator's forward and backward) below
# stage 2 (the generator's forward and the discriminator's forward and backward).
if "$electra" pretrain "${small[@]}" --set checkpoint.dir="$work/dry" --dry-run >"$work/dry.log" 2>&1 &&
  python3 - "$work/dry.log" <<'PY'; then
import re, sys
m = re.search(r"FLOPs per update \(electra, two-stage\): stage 1 (\d+), stage 2 (\d+)",
              open(sys.argv[1]).read())
sys.exit(0 if m and 0 < int(m.group(1)) < int(m.group(2)) else 1)
PY
  pass "--dry-run gives each stage's FLOPs"
else
  fail "--dry-run: $(grep FLOPs "$work/dry.log")"
fi

expect_error "a smaller generator" "generator hidden 32.*discriminator hidden 64" pretrain \
  "${small[@]}" --set model.generator_multiplier=0.5 --set checkpoint.dir="$work/bad"
expect_error "generator_steps out of range" "two_stage.generator_steps must be in" pretrain \
  "${small[@]}" --set two_stage.generator_steps=100 --set checkpoint.dir="$work/bad"
expect_error "two-stage mlm" "training: two-stage needs a trained MLM generator" pretrain \
  "${small[@]}" --set objective=mlm --set checkpoint.dir="$work/bad"

((failures == 0)) || exit 1
