#!/usr/bin/env bash
# End-to-end `electra pretrain-eval` on a tiny ELECTRA pre-trained for a few updates: the figures
# are consistent (fractions in [0, 1], the constant baseline is 1 - the replaced fraction, about
# 15% of the tokens masked), the same seed gives the same corruption and another seed another,
# the examples show the generator's top predictions at [MASK] and mark real replacements with an
# original that differs from what the discriminator saw; the precision/recall table and the
# operating point (chosen on the odd lines, measured on the even ones) are consistent; bad options
# are refused with one line.
# Usage: pretrain_eval_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_cased_checkpoint 10
awk 'NF >= 8' "$work/corpus.txt" | head -n 60 >"$work/lines.txt"
run() {  # run SEED JSON [CHECKPOINT]: the report on stdout
  "$electra" pretrain-eval --checkpoint "${3:-$work/pre}" --input "$work/lines.txt" --max-seq-len 64 \
    --batch-size 16 --seed "$1" --json "$2" --examples 2 --top 2 2>"$work/err.log"
}
run 1 "$work/a.json" >"$work/a.txt" || fail "pretrain-eval: $(cat "$work/err.log")"
run 1 "$work/b.json" >/dev/null || fail "pretrain-eval again"
run 2 "$work/c.json" >/dev/null || fail "pretrain-eval --seed 2"
cmp -s "$work/a.json" "$work/b.json" && pass "the same seed gives the same figures" ||
  fail "seed 1 twice: $(cat "$work/a.json" "$work/b.json")"
cmp -s "$work/a.json" "$work/c.json" && fail "seed 2 gives seed 1's figures" ||
  pass "another seed, another corruption"
python3 - "$work/a.json" <<'PY' && pass "consistent figures" || fail "figures: $(cat "$work/a.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["lines"] == 60, j
for key in ("recall", "precision", "accuracy", "replaced_frac", "generator_accuracy"):
    assert 0 <= j[key] <= 1, key
assert abs(j["constant_accuracy"] - (1 - j["replaced_frac"])) < 1e-12
assert abs(j["replaced"] - j["replaced_frac"] * j["tokens"]) < 1e-6
assert 0.05 < j["replaced_frac"] < 0.16, "15% masked, most of them replaced"
assert j["bce"] > 0 and j["constant_bce"] > 0
# The precision/recall table and the operating point: the validation (odd) and test (even) lines
# split the tokens; the threshold is chosen on validation at the precision asked for.
rows = j["thresholds"]
assert len(rows) == 9 and all(abs(row["threshold"] - 0.1 * k) < 1e-12 for k, row in enumerate(rows, 1))
for row in rows:
    for key in ("validation_precision", "validation_recall", "test_precision", "test_recall"):
        assert 0 <= row[key] <= 1, (row, key)
assert all(a["validation_recall"] >= b["validation_recall"] for a, b in zip(rows, rows[1:]))
p = j["operating_point"]
assert p["min_precision"] == 0.5
assert p["validation_tokens"] + p["test_tokens"] == j["tokens"]
assert p["validation_replaced"] + p["test_replaced"] == j["replaced"]
assert abs(p["validation_tokens"] - p["test_tokens"]) < 0.2 * j["tokens"], "about half each"
if p["threshold"] is not None:
    assert 0 <= p["threshold"] < 1
    assert p["validation_precision"] >= 0.5
    for key in ("validation_recall", "test_recall", "test_precision"):
        assert 0 <= p[key] <= 1, key
PY
grep -qE "replaced-token recall +[0-9.]+ +vs 0 for 'everything is original'" "$work/a.txt" &&
  pass "reports recall against the all-original baseline" || fail "report: $(cat "$work/a.txt")"
grep -qE "^  operating point: (threshold [0-9.]+, the most recall at precision >= 0.5|no threshold)" \
  "$work/a.txt" && pass "reports the operating point" || fail "report: $(cat "$work/a.txt")"
grep -qE "^ +0.50 +[0-9.]+ [0-9.]+ +[0-9.]+ [0-9.]+$" "$work/a.txt" &&
  pass "reports the precision/recall table" || fail "table: $(cat "$work/a.txt")"
# At a minimum precision of 1 the chosen threshold flags only validation tokens that were replaced.
"$electra" pretrain-eval --checkpoint "$work/pre" --input "$work/lines.txt" --max-seq-len 64 \
  --batch-size 16 --min-precision 1 --json "$work/e.json" >/dev/null 2>&1 &&
  python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["operating_point"]
sys.exit(not (p["min_precision"] == 1 and (p["threshold"] is None or p["validation_precision"] == 1)))' \
    "$work/e.json" && pass "--min-precision 1" || fail "--min-precision 1: $(cat "$work/e.json")"
grep -qE "^    [^ ]+ \[MASK\] -> generator: [^ ]+ [0-9.]+ [^ ]+ [0-9.]+; sampled [^ ]+$" \
  "$work/a.txt" && pass "--top 2 predictions at [MASK]" || fail "examples: $(cat "$work/a.txt")"
[[ $(grep -c "^  line [12]: " "$work/a.txt") == 2 ]] && pass "--examples 2" || fail "example lines"
# A replaced token (R) is shown as what the discriminator saw, with a different original:
# "      0.1234 R* seen   (was: original)".
awk '/^      [0-9.]+ R/ { n++; was = $5; sub(/\)$/, "", was); if ($3 == was) bad++ }
     END { exit !(n > 0 && bad == 0) }' "$work/a.txt" &&
  pass "replaced tokens are marked and differ from their originals" ||
  fail "replaced rows: $(grep -E '^      [0-9.]+ R' "$work/a.txt")"

# The corruption is the run's: its sampling temperature comes from trainer_state.json.
grep -q "masking as in training (.*trainer_state.json): mask_prob 0.15, mask_token_prob 0.85, sampling temperature 1$" \
  "$work/err.log" && pass "masking read from the checkpoint" || fail "masking: $(cat "$work/err.log")"
hot="$work/hot/checkpoint-hot"
mkdir -p "$work/hot" && cp -r "$(ls -d "$work"/pre/checkpoint-* | tail -1)" "$hot"
sed -i 's/masking.temperature=1\\n/masking.temperature=3\\n/' "$hot/trainer_state.json"
run 1 "$work/d.json" "$hot" >/dev/null || fail "pretrain-eval at temperature 3"
grep -q "sampling temperature 3$" "$work/err.log" && ! cmp -s "$work/a.json" "$work/d.json" &&
  pass "a run trained at temperature 3 is evaluated at 3" || fail "temperature 3: $(cat "$work/err.log")"

one_error() {  # one_error NAME PATTERN ARGS...
  expect_error "$1" "$2" pretrain-eval "${@:3}"
}
one_error "needs --checkpoint" "--checkpoint" --input "$work/lines.txt"
one_error "--top 0" "--top must be positive" --checkpoint "$work/pre" --input "$work/lines.txt" \
  --top 0
: >"$work/empty.txt"
one_error "--min-precision above 1" "--min-precision 1.5: not a number in (0, 1]" \
  --checkpoint "$work/pre" --input "$work/lines.txt" --min-precision 1.5
one_error "--min-precision not a number" "--min-precision half" --checkpoint "$work/pre" \
  --input "$work/lines.txt" --min-precision half
one_error "empty input" "no line with text" --checkpoint "$work/pre" --input "$work/empty.txt"
one_error "no such input" "cannot open" --checkpoint "$work/pre" --input "$work/none.txt"
one_error "--max-seq-len beyond the model" "max-seq-len" --checkpoint "$work/pre" \
  --input "$work/lines.txt" --max-seq-len 4096
((failures == 0)) && echo "all checks passed"
exit $((failures > 0))
