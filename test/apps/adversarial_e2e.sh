#!/usr/bin/env bash
# End-to-end pre-training with generator_training: adversarial (docs/OBJECTIVES.md "Adversarial
# generator training") on the CPU, tiny: 100 updates on English text with a falling
# discriminator loss and the reward and baseline loss in the metrics; the checkpoint's generator/
# holds the baseline, `finetune --init`, `mlm-eval` and an mle `pretrain --init` accept the
# checkpoint (and an adversarial --init from an mle run starts a fresh baseline), and a run stopped at 50 and
# resumed equals the uninterrupted one bit for bit (both models, the baseline included). Bad
# values are one error line naming the key.
# Usage: adversarial_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
make_tiny_sst2

small=("${tiny_pretrain[@]}" --set generator_training=adversarial)

dir="$work/adversarial"
if "$electra" pretrain "${small[@]}" --set checkpoint.dir="$dir" >"$dir.log" 2>&1; then
  grep -q "^generator_training: adversarial" "$dir.log" ||
    fail "the run does not say its generator training"
  grep -q "| reward [0-9.]* baseline loss [0-9.]*" "$dir.log" ||
    fail "the progress line shows no reward"
  if python3 - "$dir/metrics.jsonl" <<'PY'; then
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first, last = rows[0], rows[-1]
print(f"adversarial: disc_loss {first['disc_loss']:.3f} -> {last['disc_loss']:.3f}, "
      f"reward {first['reward']:.3f} -> {last['reward']:.3f}, "
      f"baseline_loss {first['baseline_loss']:.3f} -> {last['baseline_loss']:.3f}, "
      f"gen_acc {last['gen_acc']:.3f}")
ok = len(rows) == 10 and last["disc_loss"] < first["disc_loss"] - 0.02
ok = ok and all(r["reward"] > 0 and r["baseline_loss"] > 0 and math.isfinite(r["reward"])
                for r in rows)
sys.exit(0 if ok else 1)
PY
    pass "the discriminator loss falls; reward and baseline loss reported"
  else
    fail "the discriminator loss does not fall, or no reward"
  fi
  ckpt="$dir/checkpoint-00000100"
  python3 - "$ckpt/generator/model.safetensors" <<'PY' || fail "no baseline in generator/"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
assert header["adversarial_baseline.weight"]["shape"] == [1, 32], header.get("adversarial_baseline.weight")
assert header["adversarial_baseline.bias"]["shape"] == [1]
PY
  if "$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$dir" \
    --set finetune.device=cpu --set finetune.max_seq_len=16 --set finetune.batch_size=16 \
    --set finetune.epochs=1 --output "$work/ft" >"$work/ft.log" 2>&1; then
    pass "finetune --init accepts the checkpoint"
  else
    fail "finetune --init: $(tail -3 "$work/ft.log")"
  fi
  # The evaluation commands build a model without a baseline: they read generator/ without it.
  awk 'NF >= 8' "$work/corpus.txt" | head -n 20 >"$work/lines.txt"
  if "$electra" mlm-eval --checkpoint "$dir" --input "$work/lines.txt" --max-seq-len 64 \
    --top-k 3 >"$work/mlm-eval.txt" 2>"$work/mlm-eval.err"; then
    pass "mlm-eval reads the checkpoint"
  else
    fail "mlm-eval: $(tail -2 "$work/mlm-eval.err")"
  fi
  expect_resume_identical adversarial "$ckpt" "discriminator generator" "${small[@]}"
  # --init across the two trainings: an mle run from this checkpoint drops the baseline; an
  # adversarial run from that mle run starts a fresh baseline and says so.
  if "$electra" pretrain "${small[@]}" --set generator_training=mle --set train.steps=3 \
    --set checkpoint.dir="$work/mle" --init "$dir" >"$work/mle.log" 2>&1 &&
    "$electra" pretrain "${small[@]}" --set train.steps=3 --set checkpoint.dir="$work/again" \
      --init "$work/mle" >"$work/again.log" 2>&1 &&
    grep -q "the adversarial baseline starts from fresh weights" "$work/again.log"; then
    pass "--init between mle and adversarial runs"
  else
    fail "--init: $(tail -2 "$work/mle.log" "$work/again.log")"
  fi
else
  fail "pretrain exited: $(tail -3 "$dir.log")"
fi

expect_error "unknown generator_training" "generator_training" pretrain "${small[@]}" \
  --set generator_training=gan --set checkpoint.dir="$work/bad"
expect_error "adversarial without a binary discriminator" "generator_training: adversarial" \
  pretrain "${small[@]}" --set objective=replace-mlm --set checkpoint.dir="$work/bad"
expect_error "adversarial with a unigram generator" "generator_training: adversarial" \
  pretrain "${small[@]}" --set generator=unigram --set checkpoint.dir="$work/bad"
expect_error "adversarial at another temperature" "masking.temperature" \
  pretrain "${small[@]}" --set masking.temperature=2 --set checkpoint.dir="$work/bad"

((failures == 0)) || exit 1
