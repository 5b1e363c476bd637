#!/usr/bin/env bash
# End-to-end pre-training with the generator variants (docs/OBJECTIVES.md "Generator variants")
# on the CPU, tiny: generator: unigram pre-trains 100 updates on English text with a falling
# discriminator loss, saves its token counts and no generator/, and a run stopped at 50 and
# resumed equals the uninterrupted one bit for bit (the counts come from the checkpoint);
# sharing: none saves the generator's own tables and resumes bit for bit. Bad values are one
# error line naming the key.
# Usage: generator_variants_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data

small=("${tiny_pretrain[@]}")

# generator: unigram.
dir="$work/unigram"
if "$electra" pretrain "${small[@]}" --set generator=unigram --set checkpoint.dir="$dir" \
  >"$dir.log" 2>&1; then
  grep -q "^generator: unigram" "$dir.log" || fail "unigram: the run does not say its generator"
  if python3 - "$dir/metrics.jsonl" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first, last = rows[0], rows[-1]
print(f"unigram: disc_loss {first['disc_loss']:.3f} -> {last['disc_loss']:.3f}, "
      f"gen_loss {last['gen_loss']}")
sys.exit(0 if len(rows) == 10 and last["disc_loss"] < first["disc_loss"] - 0.02
         and last["gen_loss"] == 0 else 1)
PY
    pass "unigram: the discriminator loss falls, no generator loss"
  else
    fail "unigram: the discriminator loss does not fall"
  fi
  ckpt="$dir/checkpoint-00000100"
  [[ ! -e "$ckpt/generator" ]] || fail "unigram: a generator/ was saved"
  python3 - "$ckpt/trainer_state.safetensors" <<'PY' || fail "unigram: no token counts saved"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
e = header["unigram.counts"]
assert e["dtype"] == "F64" and e["shape"] == [8000], e
PY
  # Stopped at 50 and resumed: bit-identical to the uninterrupted run.
  expect_resume_identical unigram "$ckpt" discriminator "${small[@]}" --set generator=unigram
else
  fail "unigram: pretrain exited: $(tail -3 "$dir.log")"
fi

# sharing: none: the generator's own tables are saved in generator/ and differ from the
# discriminator's; a run stopped at 50 and resumed equals the uninterrupted one.
dir="$work/none"
if "$electra" pretrain "${small[@]}" --set sharing=none --set checkpoint.dir="$dir" \
  >"$dir.log" 2>&1; then
  grep -q "^sharing: none" "$dir.log" || fail "none: the run does not say its sharing"
  ckpt="$dir/checkpoint-00000100"
  if python3 - "$ckpt" "$dir/metrics.jsonl" <<'PY'; then
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}
d = tensors(sys.argv[1] + "/discriminator/model.safetensors")
g = tensors(sys.argv[1] + "/generator/model.safetensors")
name = "electra.embeddings.word_embeddings.weight"
rows = [json.loads(l) for l in open(sys.argv[2])]
print(f"none: gen_loss {rows[0]['gen_loss']:.3f} -> {rows[-1]['gen_loss']:.3f}, "
      f"disc_loss {rows[0]['disc_loss']:.3f} -> {rows[-1]['disc_loss']:.3f}")
sys.exit(0 if d[name] != g[name] and rows[-1]["gen_loss"] < 0.85 * rows[0]["gen_loss"] else 1)
PY
    pass "none: separate tables saved, the generator learns"
  else
    fail "none: the tables are equal or the generator loss does not fall"
  fi
  expect_resume_identical none "$ckpt" "discriminator generator" "${small[@]}" --set sharing=none
else
  fail "none: pretrain exited: $(tail -3 "$dir.log")"
fi

expect_error "unknown sharing" "sharing" pretrain "${small[@]}" \
  --set sharing=some --set checkpoint.dir="$work/bad"
expect_error "unknown generator" "generator" pretrain "${small[@]}" \
  --set generator=gan --set checkpoint.dir="$work/bad"
expect_error "unigram without replacements" "generator: unigram" pretrain "${small[@]}" \
  --set generator=unigram --set objective=mlm --set checkpoint.dir="$work/bad"

((failures == 0)) || exit 1
