#!/usr/bin/env bash
# End-to-end checks of the command line around fine-tuned checkpoints on a tiny CASED ELECTRA (a few updates):
#   - the checkpoint's casing carries into fine-tuning and its checkpoint (tokenizer files);
#   - a --vocab that is not the checkpoint's, or a checkpoint vocab.txt changed after fine-tuning
#     (two lines swapped), is refused naming both files; a model evaluated as another task too;
#   - eval --output writes GLUE dev predictions with class probabilities; predict writes
#     <Task>.probabilities.tsv; --max-eval does not apply to GLUE predict;
#   - --set tasks.mnli.epochs works; an invalid --set value is reported as that --set;
#   - the default config is named with where it was found;
#   - SQuAD eval takes the checkpoint's max_seq_len (squad.yaml says 384, the model has 128);
#   - --task rte on QNLI's files is refused by the header; `electra --help` lists every command.
# Usage: finetune_interop_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_cased_checkpoint 5

one_error() {  # expected substring, then the command: exit 2 and one line naming it
  local want="$1"; shift
  local err rc
  # The one error line (informational lines such as "tokenizer: ..." may come before it).
  err="$("$@" 2>&1 >/dev/null | grep 'error')"
  "$@" >/dev/null 2>&1; rc=$?
  if [[ $rc == 2 && $(wc -l <<<"$err") == 1 && "$err" == *"$want"* ]]; then pass "refused: $want"
  else fail "expected exit 2 and one line with '$want', got $rc: $err"; fi
}

mkdir -p "$work/cls"
python3 - "$work/cls" <<'PY'
import random, sys
random.seed(3)
words = "The man woman house river city king ship sea night day road".split()
with open(f"{sys.argv[1]}/train.tsv", "w") as f, open(f"{sys.argv[1]}/dev.tsv", "w") as g:
    for out, n in ((f, 64), (g, 16)):
        out.write("sentence\tlabel\n")
        for _ in range(n):
            label = random.randint(0, 1)
            out.write(" ".join(random.sample(words, 5) + ["Happy" if label else "Sad"]) + f"\t{label}\n")
with open(f"{sys.argv[1]}/test.tsv", "w") as f:
    f.write("index\tsentence\n0\tThe King is Happy\n1\tThe Sea is Sad\n")
PY
common=(--set finetune.device=cpu --set finetune.max_seq_len=32 --set finetune.batch_size=16)
"$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$work/pre" "${common[@]}" \
  --set finetune.epochs=1 --output "$work/out" >"$work/ft.log" 2>"$work/ft.err" ||
  fail "finetune: $(tail -2 "$work/ft.err")"
best="$work/out/best"
grep -q "^tokenizer: .*, cased (.*tokenizer_config.json)" "$work/ft.err" &&
  grep -q '"do_lower_case": false' "$best/tokenizer_config.json" &&
  pass "fine-tuning keeps the checkpoint's casing" || fail "casing: $(grep tokenizer "$work/ft.err")"
grep -q "^config: .*configs/glue.yaml (the default, found " "$work/ft.err" &&
  pass "the default config is named" || fail "no config line: $(head -3 "$work/ft.err")"
for f in config.json model.safetensors finetune.json vocab.txt tokenizer_config.json \
  special_tokens_map.json; do
  [[ -s "$best/$f" ]] || fail "best/ lacks $f"
done

# Vocabulary checks: a --vocab with two lines swapped, and the checkpoint's own vocab.txt changed.
awk 'NR == 6 {a = $0; next} NR == 7 {print; print a; next} {print}' "$best/vocab.txt" \
  >"$work/swapped.txt"
one_error "swapped.txt is not the vocabulary the checkpoint was trained with, $best/vocab.txt" \
  "$electra" eval --task sst-2 --data-dir "$work/cls" --checkpoint "$best" --vocab "$work/swapped.txt"
cp -r "$best" "$work/tampered" && cp "$work/swapped.txt" "$work/tampered/vocab.txt"
one_error "differs from vocab_hash" \
  "$electra" eval --task sst-2 --data-dir "$work/cls" --checkpoint "$work/tampered"
one_error "it cannot be evaluated as CoLA" \
  "$electra" eval --task cola --data-dir "$work/cls" --checkpoint "$best"

# eval --output and predict's probabilities.
"$electra" eval --task sst-2 --data-dir "$work/cls" --checkpoint "$best" \
  --output "$work/dev.tsv" >"$work/eval.log" 2>&1 || fail "eval --output: $(cat "$work/eval.log")"
[[ "$(head -1 "$work/dev.tsv")" == $'id\tprediction\tlabel\tp_0\tp_1' && \
  $(wc -l <"$work/dev.tsv") == 17 ]] && pass "eval --output writes GLUE dev predictions" ||
  fail "dev.tsv: $(head -2 "$work/dev.tsv")"
"$electra" predict --task sst-2 --data-dir "$work/cls" --checkpoint "$best" \
  --output "$work/pred" >/dev/null 2>&1 || fail "predict"
[[ $(head -1 "$work/pred/SST-2.tsv") == $'index\tprediction' && \
  $(sed -n 2p "$work/pred/SST-2.probabilities.tsv") =~ ^0$'\t'[01]$'\t'0\.[0-9]+$'\t'0\.[0-9]+$ ]] &&
  pass "predict writes the probabilities beside the submission file" ||
  fail "predict: $(cat "$work/pred/SST-2.probabilities.tsv")"
one_error "--max-eval does not apply to GLUE predictions" \
  "$electra" predict --task sst-2 --data-dir "$work/cls" --checkpoint "$best" --output "$work/p2" \
  --max-eval 1

# --set: every task's section; an invalid value named as its --set.
"$electra" finetune --task mnli --data-dir "$src/test/fixtures/glue/MNLI" --init "$work/pre" \
  "${common[@]}" --set tasks.mnli.epochs=1 --output "$work/mnli" >/dev/null 2>"$work/mnli.err" &&
  grep -q "1 epochs" "$work/mnli.err" && pass "--set tasks.mnli.epochs" ||
  fail "tasks.mnli: $(tail -2 "$work/mnli.err")"
[[ -s "$work/mnli/dev_predictions.dev_matched.tsv" && \
  -s "$work/mnli/dev_predictions.dev_mismatched.tsv" ]] &&
  pass "MNLI writes matched and mismatched dev predictions" || fail "MNLI: $(ls "$work/mnli")"
one_error "error: --set finetune.epochs=abc: finetune.epochs: expected an integer" \
  "$electra" finetune --task sst-2 --data-dir "$work/cls" --init "$work/pre" \
  --set finetune.epochs=abc
one_error "not a RTE file" "$electra" finetune --task rte --init "$work/pre" "${common[@]}" \
  --data-dir "$src/test/fixtures/glue/QNLI"

# SQuAD eval with the checkpoint's max_seq_len (configs/squad.yaml says 384; the model has 128).
mkdir -p "$work/squad"
cp "$src/test/fixtures/squad/tiny-v1.1.json" "$work/squad/dev-v1.1.json"
python3 - "$work/squad/dev-v1.1.json" "$work/squad/train-v1.1.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for article in data["data"]:
    for paragraph in article["paragraphs"]:
        for qa in paragraph["qas"]:
            qa["answers"] = qa["answers"][:1]
json.dump(data, open(sys.argv[2], "w"))
PY
"$electra" finetune --task squad1.1 --data-dir "$work/squad" --init "$work/pre" "${common[@]}" \
  --set finetune.max_seq_len=64 --set squad.max_query_length=24 --set finetune.epochs=1 \
  --output "$work/out-squad" >/dev/null 2>"$work/squad.err" || fail "squad: $(tail -1 "$work/squad.err")"
"$electra" eval --task squad1.1 --data-dir "$work/squad" --checkpoint "$work/out-squad/best" \
  --set finetune.device=cpu >"$work/squad-eval.log" 2>&1 &&
  grep -q "^SQuAD1.1 dev: EM" "$work/squad-eval.log" &&
  pass "SQuAD eval uses the checkpoint's max_seq_len" || fail "squad eval: $(cat "$work/squad-eval.log")"
one_error "exceeds the model's max_position_embeddings 128 (e.g. --set finetune.max_seq_len=128)" \
  "$electra" eval --task squad1.1 --data-dir "$work/squad" --checkpoint "$work/out-squad/best" \
  --set finetune.device=cpu --set finetune.max_seq_len=384

# The top-level help lists every command.
help="$("$electra" --help)"
for command in version build-vocab build-data info pretrain finetune eval predict encode score; do
  grep -q "^  $command " <<<"$help" || fail "--help lacks $command"
done
grep -q "^  finetune .*GLUE or SQuAD" <<<"$help" && pass "--help lists every command" ||
  fail "--help: $help"
((failures == 0)) || exit 1
echo "all passed"
