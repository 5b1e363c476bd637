#!/usr/bin/env bash
# End-to-end continued pre-training, `electra pretrain --init`, on the CPU:
#   - a shrunken electra-tiny pre-trained for 100 updates on the first half of a corpus, then
#     continued with --init on the second half: the new run starts at step 0 (fresh schedule) and
#     its first generator loss is the trained model's (close to the first run's last one), far
#     below a random model's (the first run's first one);
#   - --init DISC_DIR --init-generator GEN_DIR from two different runs: the shared embedding
#     tables differ, and the run says that the discriminator's copy is used;
#   - --resume refuses another config and points to --init; --init with --resume, --init with a
#     generator alone and --resume with an HF directory are one-line errors that say what the
#     directory is;
#   - --init from the HF pair of test/fixtures/hf_tiny (make_hf_fixtures.py: transformers'
#     ElectraForPreTraining and ElectraForMaskedLM) with a config that has no model section: the
#     run takes the sizes from config.json and trains; the weights it starts from are the HF ones
#     bit for bit (checked by pretrain_init_test, which compares every parameter).
# Usage: pretrain_init_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
# Two disjoint halves of the corpus, with the same vocabulary.
half=$(($(wc -l <"$work/corpus.txt") / 2))
head -n "$half" "$work/corpus.txt" >"$work/first.txt"
tail -n +"$((half + 1))" "$work/corpus.txt" >"$work/second.txt"
for part in first second; do
  "$electra" build-data --input "$work/$part.txt" --vocab "$work/vocab.txt" \
    --output "$work/shards_$part" --seq-len 64 >/dev/null 2>&1 || fail "build-data $part"
done

small=(--config "$src/configs/electra-tiny.yaml" --set data.vocab="$work/vocab.txt"
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32
  --set train.seq_len=64 --set train.batch_size=8 --set train.device=cpu
  --set optimizer.lr=5e-4 --set schedule.warmup_steps=10 --set checkpoint.every=0)

# 1. 100 updates on the first half, then --init from that run on the second half.
"$electra" pretrain "${small[@]}" --set data.shards="$work/shards_first" --set train.steps=100 \
  --set logging.every=5 --set checkpoint.dir="$work/a" >"$work/a.log" 2>&1 ||
  fail "first run exited $?: $(tail -3 "$work/a.log")"
"$electra" pretrain "${small[@]}" --set data.shards="$work/shards_second" --set train.steps=20 \
  --set logging.every=1 --set checkpoint.dir="$work/b" --init "$work/a" >"$work/b.log" 2>&1 ||
  fail "--init run exited $?: $(tail -3 "$work/b.log")"
grep -q "weights from checkpoint $work/a/checkpoint-00000100 (step 100); optimizer state" \
  "$work/b.log" || fail "no 'weights from' line: $(grep pretrain: "$work/b.log" | head -5)"
if python3 - "$work/a/metrics.jsonl" "$work/b/metrics.jsonl" <<'PY'; then
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
random_first, trained_last, continued_first = a[0]["gen_loss"], a[-1]["gen_loss"], b[0]["gen_loss"]
learned = random_first - trained_last
print(f"generator loss: random model {random_first:.3f} (update 1 of the first run), after 100 "
      f"updates {trained_last:.3f}, first update of the --init run on new text "
      f"{continued_first:.3f}")
# A fresh schedule: update 1 at the warm-up's step 0 (lr 0), then rising over the 10 warm-up
# updates.
lrs = [r["lr"] for r in b[:10]]
fresh = b[0]["step"] == 1 and lrs[0] == 0 and all(x < y for x, y in zip(lrs, lrs[1:]))
print(f"--init run: first row step {b[0]['step']}, learning rates {lrs[0]:g} ... {lrs[-1]:g}")
sys.exit(0 if fresh and learned > 0.5 and abs(continued_first - trained_last) < 0.3 * learned
         and continued_first < random_first - 0.7 * learned else 1)
PY
  pass "--init continues from the trained weights with a fresh schedule"
else
  fail "--init run does not start from the trained model"
fi

# Separate directories whose shared embedding tables differ (the first run's discriminator, the
# --init run's generator): the run says which copy it uses.
"$electra" pretrain "${small[@]}" --set data.shards="$work/shards_second" --set train.steps=1 \
  --set checkpoint.dir="$work/mixed" --init "$work/a/checkpoint-00000100/discriminator" \
  --init-generator "$work/b/checkpoint-00000020/generator" >"$work/mixed.log" 2>&1 ||
  fail "--init-generator run exited $?: $(tail -3 "$work/mixed.log")"
used="the discriminator's ($work/a/checkpoint-00000100/discriminator) is used for both"
if grep -q "shared embedding tables differs from the discriminator's in [1-9].*; $used" \
  "$work/mixed.log"; then
  pass "differing shared tables: the discriminator's copy is used, and said"
else
  fail "no line about the differing shared tables: $(grep pretrain: "$work/mixed.log" | head -5)"
fi

# 2. One-line errors (exit 2) that point to what was meant (a --resume config mismatch is found
#    after the device line).
next=("${small[@]}" --set data.shards="$work/shards_second" --set train.steps=20
  --set checkpoint.dir="$work/c")
expect_error "--resume with another config points to --init" \
  "differs in: data.shard.*start a new run with --init $work/a/checkpoint-00000100" pretrain \
  "${next[@]}" --resume "$work/a"
expect_error "--init with --resume" "--init and --resume exclude each other" pretrain "${next[@]}" \
  --init "$work/a" --resume "$work/a"
expect_error "--init with a generator alone" \
  "an HF ElectraForMaskedLM (a generator) (it is the generator/ of .*needs the discriminator" \
  pretrain "${next[@]}" --init "$work/a/checkpoint-00000100/generator"
expect_error "--resume with HF models" \
  "without trainer_state.json.*--init $src/test/fixtures/hf_tiny" pretrain "${next[@]}" \
  --resume "$src/test/fixtures/hf_tiny"
expect_error "--init with other sizes" "model.hidden is 128 in .* but hidden_size is 64" pretrain \
  "${next[@]}" --set model.hidden=128 --set model.ffn=512 --init "$work/a"

# 3. --init from the HF fixture pair (vocabulary 97, 32 positions) with no model section: a
#    97-token vocabulary and seq-32 shards of lower-case letters, and electra-tiny.yaml without
#    its model section.
tr -cs 'a-z\n' ' ' <"$work/second.txt" | tr -s '\n' >"$work/letters.txt"
"$electra" build-vocab --input "$work/letters.txt" --vocab-size 97 --output "$work/vocab97.txt" \
  >/dev/null 2>&1 || fail "build-vocab 97"
"$electra" build-data --input "$work/letters.txt" --vocab "$work/vocab97.txt" \
  --output "$work/shards97" --seq-len 32 >/dev/null 2>&1 || fail "build-data 97"
awk '/^model:/ {skip = 1; next} /^[a-z]/ {skip = 0} !skip' "$src/configs/electra-tiny.yaml" \
  >"$work/no_model.yaml"
if [[ $(wc -l <"$work/vocab97.txt") -ne 97 ]]; then
  fail "the letters corpus gives $(wc -l <"$work/vocab97.txt") tokens, not 97"
elif "$electra" pretrain --config "$work/no_model.yaml" --set data.vocab="$work/vocab97.txt" \
  --set data.shards="$work/shards97" --set train.seq_len=32 --set train.batch_size=4 \
  --set train.steps=3 --set train.device=cpu --set logging.every=1 --set checkpoint.every=0 \
  --set checkpoint.dir="$work/hf" --init "$src/test/fixtures/hf_tiny" >"$work/hf.log" 2>&1 &&
  grep -q "weights from HF models in $src/test/fixtures/hf_tiny" "$work/hf.log" &&
  grep -q "discriminator 2 layers, hidden 32, 2 heads, FFN 64, embedding 16, vocab 97" \
    "$work/hf.log" &&
  grep -q '"hidden_size": 16,' "$work/hf/checkpoint-00000003/generator/config.json" &&
  grep -q '"num_attention_heads": 1,' "$work/hf/checkpoint-00000003/generator/config.json"; then
  pass "--init from the HF pair takes its sizes and trains"
else
  fail "--init from the HF pair: $(tail -3 "$work/hf.log")"
fi

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
