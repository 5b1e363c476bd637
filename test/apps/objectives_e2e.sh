#!/usr/bin/env bash
# End-to-end pre-training with each objective (electra-15, mlm, replace-mlm,
# all-tokens-mlm; electra itself is pretrain_e2e's) on the CPU, tiny: 100 updates on English text
# with falling losses (the objective's own: the kept model's MLM loss, or for electra-15 the
# generator's MLM and the masked-position BCE), a checkpoint whose discriminator/ is the model
# fine-tuning takes (an HF ElectraForMaskedLM for the MLM objectives; no generator/ for mlm), and
# `finetune --init` accepts it (one epoch on a tiny SST-2); an mlm run resumes bit for bit.
# Usage: objectives_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
make_tiny_sst2

small=("${tiny_pretrain[@]}")

for objective in electra-15 mlm replace-mlm all-tokens-mlm; do
  dir="$work/$objective"
  if ! "$electra" pretrain "${small[@]}" --set objective="$objective" \
    --set checkpoint.dir="$dir" >"$dir.log" 2>&1; then
    fail "$objective: pretrain exited: $(tail -3 "$dir.log")"
    continue
  fi
  grep -q "^objective: $objective" "$dir.log" || fail "$objective: the run does not say its objective"
  if python3 - "$dir/metrics.jsonl" "$objective" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
objective = sys.argv[2]
first, last = rows[0], rows[-1]
keys = ["gen_loss", "disc_loss"] if objective == "electra-15" else ["mlm_loss"]
if objective in ("replace-mlm", "all-tokens-mlm"):
    keys.append("gen_loss")
print(objective, ", ".join(f"{k} {first[k]:.3f} -> {last[k]:.3f}" for k in keys))
# The cross-entropies by 15% (all-tokens-mlm's is mostly copies: it starts near 1.8, not log V);
# electra-15's BCE by 0.02 (it covers the masked positions, nearly all replaced early on).
falls = all(last[k] < (first[k] - 0.02 if k == "disc_loss" else 0.85 * first[k]) for k in keys)
sys.exit(0 if len(rows) == 10 and falls and last["total_loss"] < first["total_loss"] else 1)
PY
    pass "$objective: losses fall"
  else
    fail "$objective: losses do not fall"
  fi
  ckpt="$dir/checkpoint-00000100"
  arch="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['architectures'][0])" \
    "$ckpt/discriminator/config.json")"
  case "$objective" in
    mlm | replace-mlm) want=ElectraForMaskedLM ;;
    *) want=ElectraForPreTraining ;;
  esac
  [[ "$arch" == "$want" ]] || fail "$objective: discriminator/ is a $arch, expected $want"
  if [[ "$objective" == mlm ]]; then
    [[ ! -e "$ckpt/generator" ]] || fail "mlm: a generator/ was saved"
    # `electra encode` reads its encoder (the MLM head is not needed).
    printf 'the king of the sea\na letter to a friend\n' >"$work/enc.txt"
    if "$electra" encode --checkpoint "$dir" --input "$work/enc.txt" \
      --output "$work/enc.jsonl" >/dev/null 2>"$work/enc.err" &&
      [[ $(wc -l <"$work/enc.jsonl") -eq 2 ]]; then
      pass "mlm: encode reads the checkpoint"
    else
      fail "mlm: encode: $(tail -2 "$work/enc.err")"
    fi
    # A checkpoint without a generator resumes: stopped at 50 and resumed, bit-identical.
    expect_resume_identical mlm "$ckpt" discriminator "${small[@]}" --set objective=mlm
  else
    [[ -f "$ckpt/generator/model.safetensors" ]] || fail "$objective: no generator/"
  fi
  if "$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$dir" \
    --set finetune.device=cpu --set finetune.max_seq_len=16 --set finetune.batch_size=16 \
    --set finetune.epochs=1 --output "$work/ft-$objective" >"$work/ft.log" 2>&1; then
    pass "$objective: finetune --init accepts the checkpoint"
  else
    fail "$objective: finetune --init: $(tail -3 "$work/ft.log")"
  fi
done

# The key is checked: an unknown objective is one error line naming it.
expect_error "unknown objective" "objective" pretrain "${small[@]}" \
  --set objective=bert --set checkpoint.dir="$work/bad"

((failures == 0)) || exit 1
