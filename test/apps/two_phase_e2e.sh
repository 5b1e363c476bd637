#!/usr/bin/env bash
# Two-phase pre-training as the BERT and NVIDIA recipes do it (short sequences first, then long
# ones with --init), at tiny scale on the CPU: phase 1 at seq 64 and phase 2 at seq 128, both with
# electra-tiny's model.max_positions 128 (ELECTRA-Small: seq 128, then 512, max_positions 512):
#   - phase 2 starts from phase 1's weights (its first generator loss is phase 1's last, far below
#     a random model's) with a fresh schedule, on seq-128 shards, and writes a checkpoint with 128
#     positions;
#   - phase 2 trains the position embeddings phase 1 never used (rows 64..127): they move by more
#     than weight decay alone could move them, so the long sequences reach the model;
#   - a phase 1 with fewer positions (model.max_positions 64) cannot be continued at seq 128: a
#     one-line error naming both values and saying that --init does not grow the position table.
# Usage: two_phase_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
"$electra" build-data --input "$work/corpus.txt" --vocab "$work/vocab.txt" \
  --output "$work/shards128" --seq-len 128 >/dev/null 2>&1 || { echo "build-data 128 failed"; exit 1; }

# Phase 1: tiny_pretrain (seq 64), 60 updates. Phase 2: seq 128 on the seq-128 shards, 20 updates.
"$electra" pretrain "${tiny_pretrain[@]}" --set train.steps=60 --set checkpoint.dir="$work/p1" \
  >"$work/p1.log" 2>&1 || { echo "phase 1 failed: $(tail -2 "$work/p1.log")"; exit 1; }
"$electra" pretrain "${tiny_pretrain[@]}" --set train.seq_len=128 --set data.shards="$work/shards128" \
  --set train.batch_size=4 --set train.steps=20 --set schedule.warmup_steps=2 \
  --set logging.every=1 --set checkpoint.dir="$work/p2" --init "$work/p1" >"$work/p2.log" 2>&1 ||
  { echo "phase 2 failed: $(tail -2 "$work/p2.log")"; exit 1; }
grep -q "^train: 20 steps of 4 x 128 tokens" "$work/p2.log" || fail "phase 2 does not run at seq 128"
grep -q "weights from checkpoint $work/p1/checkpoint-00000060 (step 60)" "$work/p2.log" ||
  fail "phase 2 does not say it starts from phase 1's checkpoint"
grep -q '"max_position_embeddings": 128' "$work/p2/checkpoint-00000020/discriminator/config.json" ||
  fail "phase 2's checkpoint does not have 128 positions"

if python3 - "$work" <<'PY'; then
import json, struct, sys
work = sys.argv[1]
a = [json.loads(l) for l in open(f"{work}/p1/metrics.jsonl")]
b = [json.loads(l) for l in open(f"{work}/p2/metrics.jsonl")]
random_first, trained_last, continued_first = a[0]["gen_loss"], a[-1]["gen_loss"], b[0]["gen_loss"]
learned = random_first - trained_last
print(f"generator loss: phase 1 {random_first:.3f} -> {trained_last:.3f}; phase 2 starts at "
      f"{continued_first:.3f} (step {b[0]['step']}, lr {b[0]['lr']:g})")
# The same bounds as pretrain_init_e2e: closer to the trained model than to a random one.
starts_trained = (b[0]["step"] == 1 and b[0]["lr"] == 0 and learned > 0.5
                  and continued_first < random_first - 0.7 * learned)

def positions(checkpoint):
    """The discriminator's position table [P, E] as rows of floats (safetensors, f32)."""
    path = f"{work}/{checkpoint}/discriminator/model.safetensors"
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    t = header["electra.embeddings.position_embeddings.weight"]
    begin, end = t["data_offsets"]
    values = struct.unpack(f"<{(end - begin) // 4}f", raw[8 + n + begin:8 + n + end])
    rows, cols = t["shape"]
    return [values[r * cols:(r + 1) * cols] for r in range(rows)]

p1, p2 = positions("p1/checkpoint-00000060"), positions("p2/checkpoint-00000020")
late = [(x, y) for r in range(64, 128) for x, y in zip(p1[r], p2[r])]
moved = sum(abs(y - x) for x, y in late) / len(late)
# Weight decay alone (no gradient: the AdamW moments stay 0) multiplies w by (1 - lr_t * wd) each
# update: over 20 updates at lr <= 5e-4 and wd 0.01 it moves w by at most 20 * 5e-4 * 0.01 |w| =
# 1e-4 |w|. A gradient moves an element by about lr per update; demand 10 times the decay bound.
decay_bound = 20 * 5e-4 * 0.01 * sum(abs(x) for x, _ in late) / len(late)
print(f"position rows 64..127: mean |change| in phase 2 {moved:.3g}, weight decay alone "
      f"<= {decay_bound:.3g}")
sys.exit(0 if starts_trained and moved > 10 * decay_bound else 1)
PY
  pass "phase 2 continues phase 1's model at seq 128 and trains positions 64..127"
else
  fail "phase 2 does not continue phase 1 or does not train the new positions"
fi

# A phase 1 with 64 positions: phase 2 at seq 128 is refused, with or without a model section.
"$electra" pretrain "${tiny_pretrain[@]}" --set model.max_positions=64 --set train.steps=2 \
  --set checkpoint.dir="$work/short" >"$work/short.log" 2>&1 ||
  fail "the 64-position phase 1: $(tail -2 "$work/short.log")"
awk '/^model:/ {skip = 1; next} /^[a-z]/ {skip = 0} !skip' "$src/configs/electra-tiny.yaml" \
  >"$work/no_model.yaml"
long=(--set data.vocab="$work/vocab.txt" --set data.shards="$work/shards128" --set train.seq_len=128
  --set train.device=cpu --set train.steps=2 --set checkpoint.dir="$work/long" --init "$work/short")
expect_error "seq 128 from a 64-position model" \
  "train.seq_len is 128 but the model of --init has max_position_embeddings 64 .*does not grow the position table" \
  pretrain --config "$work/no_model.yaml" "${long[@]}"
expect_error "seq 128 from a 64-position model, model section given" \
  "model.max_positions is 128 in .* but max_position_embeddings is 64" \
  pretrain "${tiny_pretrain[@]}" "${long[@]}"

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
