#!/usr/bin/env bash
# End-to-end `electra encode` and `electra score` on a tiny CASED ELECTRA pre-trained
# for a few updates: outputs of the right shape and format (.jsonl, .npy, table), bad options
# refused with one line and exit 2. The outputs stay in OUT_DIR for text_commands_hf_check, which
# compares them with HF transformers on the same checkpoint (make_hf_fixtures.py --check-text).
# Usage: text_commands_e2e.sh ELECTRA_BINARY SOURCE_DIR OUT_DIR
set -uo pipefail
electra="$1"
src="$2"
out="$3"
source "$src/test/common/e2e_common.sh"

make_tiny_cased_checkpoint 10

rm -rf "$out" && mkdir -p "$out"
model="$(ls -d "$work"/pre/checkpoint-*/discriminator | tail -1)"
cp -r "$model" "$out/model"
cat >"$out/input.txt" <<'TXT'
The Quick Brown Fox jumps over the lazy dog.
Punctuation, accents (café, naïve) and CAPITALS: all kept by a cased model!

A third line that is a little longer than the others, so that the batch holds padding rows.
TXT
grep -q '"do_lower_case": false' "$out/model/tokenizer_config.json" &&
  pass "a cased run writes do_lower_case false" || fail "tokenizer_config.json: $(cat "$out/model/tokenizer_config.json")"

for layer in 0 -1; do
  "$electra" encode --checkpoint "$work/pre" --input "$out/input.txt" --tokens --layer "$layer" \
    --batch-size 3 --output "$out/encoded.$layer.jsonl" 2>"$work/enc.err" ||
    fail "encode --layer $layer: $(cat "$work/enc.err")"
done
lines=$(wc -l <"$out/encoded.-1.jsonl")
[[ "$lines" == 4 ]] && pass "encode --tokens: one JSON line per input line" || fail "encode wrote $lines lines"
grep -q '"The"' "$out/encoded.-1.jsonl" && pass "cased tokens kept" || fail "no cased token 'The'"
"$electra" score --checkpoint "$work/pre" --input "$out/input.txt" --format jsonl \
  --output "$out/scored.jsonl" 2>"$work/score.err" || fail "score: $(cat "$work/score.err")"
[[ $(wc -l <"$out/scored.jsonl") == 4 ]] && pass "score --format jsonl" || fail "score lines"
table="$("$electra" score --checkpoint "$model" --input "$out/input.txt" 2>/dev/null)"
grep -q "^line 1: The Quick" <<<"$table" && grep -qE '^  0\.[0-9]{4}' <<<"$table" &&
  pass "score table" || fail "score table: $table"
"$electra" encode --checkpoint "$work/pre" --input "$out/input.txt" --pool mean \
  --output "$out/pooled.npy" 2>/dev/null || fail "encode .npy"
python3 - "$out/pooled.npy" <<'PY' && pass ".npy is float32 [4, 64]" || fail ".npy header"
import sys
data = open(sys.argv[1], "rb").read()
assert data[:6] == b"\x93NUMPY", data[:10]
n = int.from_bytes(data[8:10], "little")
assert b"'shape': (4, 64)" in data[10:10 + n] and len(data) == 10 + n + 4 * 4 * 64
PY

one_error() {  # expected substring, then the command
  local want="$1"; shift
  local err rc
  err="$("$@" 2>&1 >/dev/null)"; rc=$?
  if [[ $rc == 2 && $(wc -l <<<"$err") == 1 && "$err" == *"$want"* ]]; then pass "refused: $want"
  else fail "expected exit 2 and one line with '$want', got $rc: $err"; fi
}
one_error "--layer 3 is outside [-3, 2]" "$electra" encode --checkpoint "$work/pre" \
  --input "$out/input.txt" --layer 3
one_error "write it as .jsonl" "$electra" encode --checkpoint "$work/pre" --input "$out/input.txt" \
  --tokens --output "$work/x.npy"
one_error "no such file" "$electra" score --checkpoint "$work/pre" --input "$work/none.txt"
one_error "--max-seq-len 999 must lie in [2, 128]" "$electra" encode --checkpoint "$work/pre" \
  --input "$out/input.txt" --max-seq-len 999
((failures == 0)) || exit 1
echo "all passed"
