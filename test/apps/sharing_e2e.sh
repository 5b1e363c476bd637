#!/usr/bin/env bash
# End-to-end pre-training with sharing: all and gdes (docs/OBJECTIVES.md "Generator variants")
# on the CPU, tiny: 100 updates on English text with falling generator and discriminator losses;
# all saves a generator/ that holds the tied encoder (equal to discriminator/'s), gdes a
# discriminator/ whose tables are E_G + E_delta (E_delta exact in trainer_state.safetensors); a run
# stopped at 50 and resumed equals the uninterrupted one bit for bit; `finetune --init` accepts
# the checkpoint; with transformers installed, HF loads both directories with no missing or
# unexpected weight. Unequal sizes for all and a run without a generator are one error line.
# Usage: sharing_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
make_tiny_sst2

# One head of 64: the generator of multiplier 1 has hidden / 64 = 1 head (sharing: all).
small=("${tiny_pretrain[@]}" --set model.heads=1)
all=(--set sharing=all --set model.generator_multiplier=1)
gdes=(--set sharing=gdes)

# The checks on a checkpoint's files (python: the standard library reads safetensors' header).
cat >"$work/check.py" <<'PY'
import json, struct, sys, array
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}
sharing, ckpt, metrics = sys.argv[1:4]
rows = [json.loads(l) for l in open(metrics)]
first, last = rows[0], rows[-1]
print(f"{sharing}: gen_loss {first['gen_loss']:.3f} -> {last['gen_loss']:.3f}, "
      f"disc_loss {first['disc_loss']:.3f} -> {last['disc_loss']:.3f}")
assert len(rows) == 10, len(rows)
assert last["gen_loss"] < 0.85 * first["gen_loss"], "the generator loss does not fall"
assert last["disc_loss"] < first["disc_loss"] - 0.02, "the discriminator loss does not fall"
d = tensors(ckpt + "/discriminator/model.safetensors")
g = tensors(ckpt + "/generator/model.safetensors")
if sharing == "all":
    # The generator's directory holds the tied encoder: every electra.* tensor equal to the
    # discriminator's, its head its own.
    encoder = [k for k in g if k.startswith("electra.")]
    assert any(k.startswith("electra.encoder.layer.1.") for k in encoder), sorted(g)
    assert "electra.embeddings_project.weight" in encoder
    assert set(encoder) == {k for k in d if k.startswith("electra.")}
    assert all(g[k] == d[k] for k in encoder), "a tied tensor differs between the directories"
else:
    # discriminator/ holds E_G + E_delta (f32, one rounding) with E_G generator/'s and E_delta the
    # exact residual of trainer_state.safetensors; its LayerNorm is its own.
    state = tensors(ckpt + "/trainer_state.safetensors")
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        name = f"electra.embeddings.{table}.weight"
        base = array.array("f", g[name])
        delta = array.array("f", state[f"discriminator/electra.embeddings.{table}.delta"])
        summed = array.array("f", d[name])
        expect = array.array("f", [b + r for b, r in zip(base, delta)])  # rounded to f32
        assert summed == expect, f"{name} is not E_G + E_delta"
        assert any(r != 0 for r in delta), f"{table}: the residual did not move"
    assert d["electra.embeddings.LayerNorm.weight"] != g["electra.embeddings.LayerNorm.weight"]
PY

for sharing in all gdes; do
  declare -n args="$sharing"
  dir="$work/$sharing"
  if ! "$electra" pretrain "${small[@]}" "${args[@]}" --set checkpoint.dir="$dir" \
    >"$dir.log" 2>&1; then
    fail "$sharing: pretrain exited: $(tail -3 "$dir.log")"
    continue
  fi
  grep -q "^sharing: $sharing" "$dir.log" || fail "$sharing: the run does not say its sharing"
  ckpt="$dir/checkpoint-00000100"
  if python3 "$work/check.py" "$sharing" "$ckpt" "$dir/metrics.jsonl"; then
    pass "$sharing: losses fall, the checkpoint holds what it should"
  else
    fail "$sharing: losses or checkpoint files"
  fi
  expect_resume_identical "$sharing" "$ckpt" "discriminator generator" "${small[@]}" "${args[@]}"
  if "$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$dir" \
    --set finetune.device=cpu --set finetune.max_seq_len=16 --set finetune.batch_size=16 \
    --set finetune.epochs=1 --output "$work/ft-$sharing" >"$work/ft.log" 2>&1; then
    pass "$sharing: finetune --init accepts the checkpoint"
  else
    fail "$sharing: finetune --init: $(tail -3 "$work/ft.log")"
  fi
  if python3 -c "import transformers" 2>/dev/null; then
    if python3 - "$ckpt" <<'PY' >"$work/hf.log" 2>&1; then
import sys
from transformers import ElectraForMaskedLM, ElectraForPreTraining
for cls, part in ((ElectraForPreTraining, "discriminator"), (ElectraForMaskedLM, "generator")):
    _, info = cls.from_pretrained(f"{sys.argv[1]}/{part}", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys")}
    assert not bad, (part, bad)
PY
      pass "$sharing: HF loads both directories whole"
    else
      fail "$sharing: HF loading: $(tail -3 "$work/hf.log")"
    fi
  else
    echo "skipped: $sharing: HF loading (transformers not installed)"
  fi
done

expect_error "all with unequal sizes" "sharing: all needs a generator of the discriminator's size" \
  pretrain "${small[@]}" --set sharing=all --set checkpoint.dir="$work/bad"
expect_error "gdes without a generator" "sharing: gdes ties the generator" \
  pretrain "${small[@]}" --set sharing=gdes --set objective=mlm --set checkpoint.dir="$work/bad"

((failures == 0)) || exit 1
