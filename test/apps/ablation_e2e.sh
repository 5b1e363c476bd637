#!/usr/bin/env bash
# bench/ablation.sh with a time budget, at tiny scale on the CPU: two objectives (electra, mlm) of
# a 2-layer 64-wide model, --budget-s 3 per row, two tasks of tiny synthetic GLUE, two seeds.
# Checks:
#   - the probe turns the seconds into FLOPs: budget_flops = 3 s x seq/s / 8 x FLOPs per electra
#     update, and both rows get that budget to within one update (mlm, cheaper per update, more
#     updates than electra);
#   - table.md has a row per objective, each task's cell the median over the two seeds with their
#     [min, max];
#   - a rerun with the same --out repeats no pre-training and no fine-tuning and gives the same table;
#     with another --budget-s it is refused;
#   - a pre-training cut by SIGINT (a time limit: scripts/gpu_check.sh's ablation phase) exits 75,
#     and the same command resumes it from the checkpoint the signal saved, to the same table;
#   - --finetune-set reaches every fine-tuning run (an unknown finetune.attention is refused there).
# Usage: ablation_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
python3 "$src/test/common/make_tiny_glue.py" "$work/data" "$work/corpus.txt"

run=(bash "$src/bench/ablation.sh" --electra "$electra" --data "$work/data" --vocab "$work/vocab.txt"
  --budget-s 3 --probe-updates 8 --objectives "electra mlm" --tasks "SST-2 RTE" --seeds 2
  --max-train 48 --epochs 1 --ft-seq-len 32 --device cpu --threads 2 --out "$work/ab"
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32 --set model.layers=2
  --set train.batch_size=8)
"${run[@]}" >"$work/ab.log" 2>&1 || { echo "ablation.sh exited $?:"; tail -5 "$work/ab.log"; exit 1; }
cat "$work/ab/table.md"

if python3 - "$work/ab" <<'PY'; then
import re, sys
out = sys.argv[1]
probe = open(f"{out}/probe.log").read()
seq_per_s = float(re.findall(r" \| ([0-9.]+) seq/s ", probe)[-1])
budget = float(open(f"{out}/budget_flops").read())
table = [l for l in open(f"{out}/table.md") if l.startswith("| ") and not l.startswith(("| row", "| ---"))]
rows = {r[0]: r for r in ([c.strip() for c in l.strip().strip("|").split("|")] for l in table)}
ok = set(rows) == {"electra", "mlm"}
for label, r in rows.items():
    updates, flops = int(r[1]), float(r[2])
    # Each row: floor(budget / FLOPs per update) updates, so within one update of the budget
    # (the table's FLOPs have 3 digits: 0.5% more).
    ok = ok and flops <= budget * 1.005 and flops >= budget * 0.995 - budget / updates
    cells = r[3:5]
    ok = ok and all(re.fullmatch(r"-?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\]", c) for c in cells)
    for c in cells:
        m, lo, hi = map(float, re.findall(r"-?[0-9.]+", c))
        ok = ok and lo <= m <= hi
ok = ok and int(rows["mlm"][1]) > int(rows["electra"][1])
print(f"probe {seq_per_s} seq/s -> {budget:.4g} FLOPs per row; updates electra {rows['electra'][1]}, mlm {rows['mlm'][1]}")
sys.exit(0 if ok else 1)
PY
  pass "the time budget, equal FLOPs and the seeds' spread"
else
  fail "budget, FLOPs or table: $(tail -3 "$work/ab.log")"
fi
electra_flops="$("$electra" pretrain --config "$src/configs/electra-tiny.yaml" --set data.shards="$work/ab/shards" \
  --set data.vocab="$work/vocab.txt" --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32 \
  --set model.layers=2 --set train.batch_size=8 --dry-run 2>&1 | sed -n 's/^  FLOPs per update (electra): //p')"
seq_per_s="$(sed -n 's/.* | \([0-9.]*\) seq\/s .*/\1/p' "$work/ab/probe.log" | tail -1)"
# budget_flops is written with 6 digits (%.6g): a relative error up to 5e-6.
if python3 -c "import sys; b, s, f = map(float, sys.argv[1:]); sys.exit(0 if abs(b - 3 * s / 8 * f) <= 1e-5 * b else 1)" \
  "$(cat "$work/ab/budget_flops")" "$seq_per_s" "$electra_flops"; then
  pass "budget_flops = 3 s x seq/s / 8 x $electra_flops"
else
  fail "budget_flops $(cat "$work/ab/budget_flops") is not 3 x $seq_per_s / 8 x $electra_flops"
fi

cp "$work/ab/table.md" "$work/table1.md"
"${run[@]}" >"$work/ab2.log" 2>&1 || fail "the rerun exited $?: $(tail -2 "$work/ab2.log")"
# The script's progress lines ("[HH:MM:SS] electra: pre-training ...") say what it runs.
if ! grep -q "^\[[0-9:]*\] .*\(pre-training\|fine-tuning\|probe\)" "$work/ab2.log" &&
  cmp -s "$work/table1.md" "$work/ab/table.md"; then
  pass "a rerun repeats nothing and gives the same table"
else
  fail "the rerun: $(grep "^\[[0-9:]*\] " "$work/ab2.log" | head -3)"
fi

# The same --out with another --budget-s: refused (its rows were sized for 3 s), one line, exit 2.
"${run[@]}" --budget-s 5 >"$work/ab3.log" 2>&1
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$work/ab3.log") -eq 1 ]] &&
  grep -q "^ablation.sh: .* was sized for --budget-s 3: give it that, or another --out" "$work/ab3.log"; then
  pass "another --budget-s for the same --out is refused"
else
  fail "another --budget-s: exit $rc: $(cat "$work/ab3.log")"
fi

# mlm's row again from nothing, its pre-training signalled at its first progress line: exit 75, then
# the same command resumes it (a resumed run has the bits of an uninterrupted one: same table).
cp -r "$work/ab" "$work/ab5"
rm -rf "$work/ab5/mlm" "$work/ab5/mlm.pretrain.log" "$work/ab5"/ft-*-mlm.txt
"${run[@]}" --out "$work/ab5" >"$work/ab5.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "^step " "$work/ab5/mlm.pretrain.log" 2>/dev/null && break
  sleep 0.1
done
pkill -INT -f "checkpoint.dir=$work/ab5/mlm"
wait "$pid"
rc=$?
"${run[@]}" --out "$work/ab5" >"$work/ab5b.log" 2>&1
rc2=$?
if [[ $rc -eq 75 ]] && grep -q "mlm: stopped before update" "$work/ab5.log" && [[ $rc2 -eq 0 ]] &&
  grep -q "mlm: pre-training .* --resume" "$work/ab5b.log" &&
  cmp -s "$work/table1.md" "$work/ab5/table.md"; then
  pass "a pre-training cut by SIGINT exits 75 and the same command resumes it to the same table"
else
  fail "SIGINT: exit $rc then $rc2: $(tail -2 "$work/ab5.log"); $(tail -2 "$work/ab5b.log")"
fi

# --finetune-set: electra's one task left to fine-tune is given an unknown attention.
cp -r "$work/ab" "$work/ab4"
rm "$work/ab4/ft-RTE-electra.txt"
"${run[@]}" --out "$work/ab4" --finetune-set finetune.attention=fast >"$work/ab4.log" 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q "electra RTE: finetune failed: " "$work/ab4.log" &&
  grep -q "finetune.attention.*'fast'" "$work/ab4.log" &&
  pass "--finetune-set reaches the fine-tuning runs" ||
  fail "--finetune-set: exit $rc: $(tail -2 "$work/ab4.log")"

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
