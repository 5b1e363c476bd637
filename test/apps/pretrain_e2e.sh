#!/usr/bin/env bash
# End-to-end `electra pretrain` on the CPU with a shrunken electra-tiny:
#   - the losses fall over 100 updates and the discriminator beats the trivial baseline (the
#     best constant prediction);
#   - a run stopped at update 40 and resumed to 80 equals an uninterrupted 80-update run bit for
#     bit (logged losses and final parameters and optimizer state);
#   - SIGINT saves a checkpoint and exits 0, and the run resumes from it;
#   - a process killed (SIGKILL) while it writes checkpoints leaves the previous one loadable;
#   - a non-finite loss stops the run with exit 3 and leaves the checkpoints untouched;
#   - bad input (vocab size, resume with another config, unknown key) is one line, exit 2.
# Usage: pretrain_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data

small=(--config "$src/configs/electra-tiny.yaml"
  --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt"
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32
  --set train.seq_len=64 --set train.batch_size=8 --set train.device=cpu
  --set logging.every=5)

# 1. The losses fall, and the discriminator beats the trivial baseline: the best constant
#    prediction, P(replaced) = the replaced fraction everywhere, whose BCE is the entropy of that
#    fraction. (Its accuracy, 1 - replaced fraction, is not beaten this early: HF transformers'
#    ELECTRA on the same data, sizes and updates stays at it too; its loss falls below the entropy,
#    as ours does.) lr 5e-4 is the paper's ELECTRA-Small rate.
"$electra" pretrain "${small[@]}" --set train.steps=100 --set optimizer.lr=5e-4 \
  --set schedule.warmup_steps=10 --set checkpoint.dir="$work/fall" --set checkpoint.every=0 \
  >"$work/fall.log" 2>&1 || fail "pretrain run exited $?: $(tail -3 "$work/fall.log")"
if python3 - "$work/fall/metrics.jsonl" <<'PY'; then pass "losses fall"; else fail "losses do not fall"; fi
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first, last = rows[0], rows[-1]
tail = rows[-4:]  # the last 20 updates
def entropy(p):
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))
disc = sum(r['disc_loss'] for r in tail) / len(tail)
baseline = sum(entropy(r['replaced_frac']) for r in tail) / len(tail)
print(f"gen loss {first['gen_loss']:.3f} -> {last['gen_loss']:.3f}, disc loss {disc:.4f} "
      f"vs constant-prediction baseline {baseline:.4f} (last 20 updates), rows {len(rows)}")
sys.exit(0 if len(rows) == 20 and last['gen_loss'] < first['gen_loss'] - 0.5
         and disc < 0.95 * baseline else 1)
PY

# 2. Resume equals the uninterrupted run, bit for bit.
run=(--set train.steps=80 --set checkpoint.every=20)
"$electra" pretrain "${small[@]}" "${run[@]}" --set checkpoint.dir="$work/a" >/dev/null 2>&1 ||
  fail "uninterrupted run"
"$electra" pretrain "${small[@]}" "${run[@]}" --set checkpoint.dir="$work/b" --stop-after 40 \
  >/dev/null 2>&1 || fail "first half"
[[ -d "$work/b/checkpoint-00000040" ]] || fail "no checkpoint at the stop"
# With another model.attention: the CPU ignores it, so the resume says nothing of the bits (on a GPU
# it would: resume_bits_note) and stays bit-identical.
"$electra" pretrain "${small[@]}" "${run[@]}" --set checkpoint.dir="$work/b" --resume "$work/b" \
  --set model.attention=flash >"$work/resume.log" 2>&1 || fail "resume: $(tail -2 "$work/resume.log")"
grep -q "resumed from .*checkpoint-00000040 at step 40" "$work/resume.log" || fail "resume message"
grep -q "not the bits an uninterrupted run" "$work/resume.log" && fail "a note on the CPU's bits"
grep -q '"device": "cpu"' "$work/b/checkpoint-00000040/trainer_state.json" ||
  fail "trainer_state.json does not record the device"
same=1
for f in discriminator/model.safetensors generator/model.safetensors trainer_state.safetensors; do
  cmp -s "$work/a/checkpoint-00000080/$f" "$work/b/checkpoint-00000080/$f" || same=0
done
losses() { python3 -c "import json,sys; [print(r['step'], r['gen_loss'], r['disc_loss'], r['grad_norm']) for r in map(json.loads, open(sys.argv[1]))]" "$1"; }
[[ "$(losses "$work/a/metrics.jsonl")" == "$(losses "$work/b/metrics.jsonl")" ]] || same=0
if ((same)); then pass "resume is bit-identical"; else fail "resumed run differs"; fi

# 3. SIGINT saves a checkpoint and exits 0.
"$electra" pretrain "${small[@]}" --set train.steps=100000 --set checkpoint.every=0 \
  --set logging.every=1 --set checkpoint.dir="$work/int" >"$work/int.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  [[ -s "$work/int/metrics.jsonl" ]] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
if [[ $rc -eq 0 ]] && grep -q "SIGINT received" "$work/int.log" &&
  ls -d "$work"/int/checkpoint-* >/dev/null 2>&1; then
  pass "SIGINT saves and exits 0"
else
  fail "SIGINT: exit $rc, $(tail -2 "$work/int.log")"
fi
"$electra" pretrain "${small[@]}" --set train.steps=100000 --set checkpoint.every=0 \
  --set logging.every=1 --set checkpoint.dir="$work/int" --resume "$work/int" --stop-after 2 \
  >/dev/null 2>&1 || fail "resume after SIGINT"

# 4. SIGKILL while checkpoints are written (one per update) leaves a loadable checkpoint.
"$electra" pretrain "${small[@]}" --set train.steps=100000 --set checkpoint.every=1 \
  --set checkpoint.keep=2 --set checkpoint.dir="$work/kill" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  (($(ls -d "$work"/kill/checkpoint-* 2>/dev/null | wc -l) >= 2)) && break
  sleep 0.05
done
sleep 0.3
kill -KILL "$pid"
wait "$pid" 2>/dev/null
if "$electra" pretrain "${small[@]}" --set train.steps=100000 --set checkpoint.every=1 \
  --set checkpoint.keep=2 --set checkpoint.dir="$work/kill" --resume "$work/kill" \
  --stop-after 1 >"$work/kill.log" 2>&1; then
  pass "SIGKILL during checkpoint writes leaves a loadable checkpoint"
else
  fail "after SIGKILL: $(tail -2 "$work/kill.log")"
fi

# 5. A non-finite loss stops the run (exit 3) and never touches the last good checkpoint: the
#    weights of a checkpoint are poisoned with huge finite values (3e38: a checkpoint holding NaN
#    is refused on load, test/bad_input), whose forward pass overflows, then resumed. (.lock is
#    the run directory lock, not a checkpoint.)
mkdir -p "$work/nan" && cp -r "$work/a/checkpoint-00000040" "$work/nan/checkpoint-00000040"
python3 - "$work/nan/checkpoint-00000040" <<'PY'
import json, struct, sys
for model in ("discriminator",):
    path = f"{sys.argv[1]}/{model}/model.safetensors"
    data = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    begin, end = header["electra.encoder.layer.0.output.LayerNorm.weight"]["data_offsets"]
    for off in range(8 + n + begin, 8 + n + end, 4):
        data[off:off + 4] = struct.pack("<f", 3e38)
    open(path, "wb").write(data)
PY
before="$(cd "$work/nan" && find . -type f -exec sha256sum {} + | sort)"
"$electra" pretrain "${small[@]}" "${run[@]}" --set checkpoint.dir="$work/nan" \
  --resume "$work/nan" >"$work/nan.log" 2>&1
rc=$?
after="$(cd "$work/nan" && find . -type f ! -name metrics.jsonl ! -name .lock -exec sha256sum {} + | sort)"
before="$(echo "$before" | grep -v metrics.jsonl)"
if [[ $rc -eq 3 ]] && grep -q "not finite" "$work/nan.log" && [[ "$before" == "$after" ]]; then
  pass "NaN stops with exit 3 and keeps the checkpoints"
else
  fail "NaN: exit $rc, $(tail -2 "$work/nan.log")"
fi

# 6. Bad input: one error line naming the problem, exit 2.
expect_error "vocab size mismatch" "model.vocab_size is 9000" pretrain "${small[@]}" \
  --set model.vocab_size=9000 --set checkpoint.dir="$work/x"
expect_error "resume with another config" "differs in: .*optimizer" pretrain "${small[@]}" \
  "${run[@]}" --set optimizer.lr=5e-3 --set checkpoint.dir="$work/x" --resume "$work/a"
expect_error "unknown key" "train.stepz" pretrain "${small[@]}" --set train.stepz=3
expect_error "missing shards" "nowhere' does not exist" pretrain "${small[@]}" \
  --set data.shards="$work/nowhere"

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
