#!/usr/bin/env bash
# End-to-end `electra mlm-eval` (Appendix G) on tiny checkpoints pre-trained for a few updates in
# the test: an electra checkpoint reports (a) the generator's and (b) the discriminator's
# masked-token accuracy, an mlm checkpoint (c) its own, each in [0, 1] and the others said n/a;
# both are measured on the same masked positions (the same count); shards work as input; bad
# input is refused with one line.
# Usage: mlm_eval_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_cased_checkpoint 10
"$electra" pretrain --config "$src/configs/electra-tiny.yaml" \
  --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt" --set objective=mlm \
  --set model.vocab_size=3000 --set model.hidden=64 --set model.ffn=128 \
  --set model.embedding_size=32 --set model.layers=2 --set train.seq_len=64 \
  --set train.batch_size=8 --set train.device=cpu --set train.steps=10 \
  --set checkpoint.dir="$work/mlm" --set checkpoint.every=0 >"$work/mlm.log" 2>&1 ||
  fail "mlm pretrain: $(tail -2 "$work/mlm.log")"
awk 'NF >= 8' "$work/corpus.txt" | head -n 40 >"$work/lines.txt"

run() {  # run CHECKPOINT JSON [ARGS...]: the report on stdout
  "$electra" mlm-eval --checkpoint "$1" --input "$work/lines.txt" --max-seq-len 64 \
    --batch-size 16 --top-k 5 --json "$2" "${@:3}" 2>"$work/err.log"
}
run "$work/pre" "$work/electra.json" >"$work/electra.txt" || fail "electra: $(cat "$work/err.log")"
run "$work/mlm" "$work/mlm.json" >"$work/mlm.txt" || fail "mlm: $(cat "$work/err.log")"
# accuracy X in [0, 1] on each line that applies, "n/a" on the others.
check() {  # check REPORT LETTER applies|n/a
  local line
  line="$(grep "^  ($2) " "$1")"
  if [[ "$3" == applies ]]; then
    python3 -c "
import re, sys
m = re.search(r'accuracy ([0-9.]+)', sys.argv[1])
sys.exit(0 if m and 0 <= float(m.group(1)) <= 1 else 1)" "$line"
  else
    grep -q "n/a (" <<<"$line"
  fi
}
check "$work/electra.txt" a applies && check "$work/electra.txt" b applies &&
  check "$work/electra.txt" c n/a && pass "electra: (a) and (b) in [0, 1], (c) n/a" ||
  fail "electra report: $(cat "$work/electra.txt")"
check "$work/mlm.txt" a n/a && check "$work/mlm.txt" b n/a && check "$work/mlm.txt" c applies &&
  pass "mlm: (c) in [0, 1], (a) and (b) n/a" || fail "mlm report: $(cat "$work/mlm.txt")"
grep -qE "^  \(a\) generator +accuracy [0-9.]+ +loss [0-9.]+$" "$work/electra.txt" &&
  grep -qE "^  \(c\) the checkpoint's MLM head +accuracy [0-9.]+ +loss [0-9.]+$" "$work/mlm.txt" &&
  pass "losses where defined" || fail "loss lines: $(cat "$work/electra.txt" "$work/mlm.txt")"
python3 - "$work/electra.json" "$work/mlm.json" <<'PY' && pass "the same masked positions" ||
import json, sys
e, m = (json.load(open(p)) for p in sys.argv[1:])
assert e["masked"] == m["masked"] > 0, (e, m)
assert e["objective"] == "electra" and m["objective"] == "mlm"
assert 0 <= e["discriminator_accuracy"] <= e["top_k_coverage"] <= 1, e
assert e["generator_loss"] > 0 and m["mlm_loss"] > 0
PY
  fail "json: $(cat "$work/electra.json" "$work/mlm.json")"
"$electra" mlm-eval --checkpoint "$work/pre" --input "$work/shards" --max-lines 20 --top-k 3 \
  >"$work/shards.txt" 2>"$work/err.log" && check "$work/shards.txt" b applies &&
  grep -q "in 20 held-out sequences" "$work/shards.txt" && pass "shards as input" ||
  fail "shards: $(cat "$work/err.log" "$work/shards.txt")"

one_error() {  # one_error NAME PATTERN ARGS...
  expect_error "$1" "$2" mlm-eval "${@:3}"
}
one_error "needs --checkpoint" "--checkpoint" --input "$work/lines.txt"
one_error "--top-k 0" "--top-k must be positive" --checkpoint "$work/pre" \
  --input "$work/lines.txt" --top-k 0
one_error "--top-k beyond the vocabulary" "exceeds the vocabulary" --checkpoint "$work/pre" \
  --input "$work/lines.txt" --top-k 100000
one_error "--mask-prob 1.5" "--mask-prob 1.5: must be a number in (0, 1)" \
  --checkpoint "$work/pre" --input "$work/lines.txt" --mask-prob 1.5
: >"$work/empty.txt"
one_error "empty input" "no sequence with text" --checkpoint "$work/pre" --input "$work/empty.txt"
one_error "no such input" "no such file or directory" --checkpoint "$work/pre" \
  --input "$work/none.txt"
printf 'valid words here\n\xff\xfe broken\n' >"$work/bad.txt"
one_error "non-UTF-8 text" "bad.txt:2: not UTF-8 text" --checkpoint "$work/pre" \
  --input "$work/bad.txt"
((failures == 0)) && echo "all checks passed"
exit $((failures > 0))
