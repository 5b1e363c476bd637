#!/usr/bin/env bash
# End-to-end `electra finetune / eval / predict` on the CPU: a tiny ELECTRA is
# pre-trained for 60 updates on English text (scripts/english_corpus.sh), then
#   - fine-tuned on a synthetic single-sentence classification task (the label is which of two
#     keywords the sentence holds): dev accuracy >= 0.95;
#   - fine-tuned on a synthetic STS-B-style regression (the score counts shared keywords):
#     Spearman at the best epoch >= 0.5, above the first epoch's;
#   - `eval` on the best checkpoint reproduces its dev accuracy; `predict` writes SST-2.tsv;
#   - with ../shared/data/glue present, 4000 SST-2 training sentences (2 epochs) beat the majority
#     class on the first 300 dev sentences (skipped otherwise, said so);
#   - bad input (unknown task, --init without a model) is one error line, exit 2.
# The vocabulary comes from the checkpoints (pretrain writes vocab.txt into them).
# Usage: finetune_e2e.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"

make_tiny_data
"$electra" pretrain --config "$src/configs/electra-tiny.yaml" \
  --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt" \
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32 \
  --set train.seq_len=64 --set train.batch_size=8 --set train.device=cpu \
  --set train.steps=60 --set optimizer.lr=5e-4 --set schedule.warmup_steps=6 \
  --set checkpoint.dir="$work/pre" --set checkpoint.every=0 >"$work/pre.log" 2>&1 ||
  { echo "pretrain failed: $(tail -2 "$work/pre.log")"; exit 1; }

python3 - "$work" <<'PY'
import os, random, sys
work = sys.argv[1]
random.seed(5)
fill = "the man woman house river city king ship sea night day road horse letter friend door".split()
def sentence(key):
    words = random.sample(fill, 6)
    words.insert(random.randint(0, 6), key)
    return " ".join(words)
os.makedirs(f"{work}/cls", exist_ok=True)
for split, n in (("train", 320), ("dev", 64)):
    with open(f"{work}/cls/{split}.tsv", "w") as f:
        f.write("sentence\tlabel\n")
        for _ in range(n):
            label = random.randint(0, 1)
            f.write(sentence("happy" if label else "sad") + " \t" + str(label) + "\n")
with open(f"{work}/cls/test.tsv", "w") as f:
    f.write("index\tsentence\n")
    for i in range(10):
        f.write(f"{i}\t{sentence('happy' if i % 2 else 'sad')}\n")
# STS-B layout: 10 columns, sentences in 7 and 8, score in 9: 5 x (shared keywords) / 2.
os.makedirs(f"{work}/sts", exist_ok=True)
keys = ["red", "green", "blue"]
for split, n in (("train", 320), ("dev", 64)):
    with open(f"{work}/sts/{split}.tsv", "w") as f:
        f.write("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n")
        for i in range(n):
            shared = random.randint(0, 2)
            a = random.sample(keys, 2)
            b = a[:shared] + [k for k in keys if k not in a][: 2 - shared]
            s1 = " ".join(random.sample(fill, 4) + a)
            s2 = " ".join(random.sample(fill, 4) + b)
            f.write(f"{i}\tg\tf\t2020\t{i}\ts\ts\t{s1}\t{s2}\t{2.5 * shared:.1f}\n")
PY

common=(--init "$work/pre" --set finetune.device=cpu
  --set finetune.max_seq_len=32 --set finetune.batch_size=16)

# 1. Classification reaches near-perfect accuracy.
"$electra" finetune --task sst-2 --data-dir "$work/cls" "${common[@]}" --set finetune.epochs=4 \
  --output "$work/out-cls" >"$work/cls.log" 2>"$work/cls.err"
best="$(sed -n 's/^SST-2 seed 1: best epoch [0-9]*: accuracy \([0-9.]*\).*/\1/p' "$work/cls.log")"
if [[ -n "$best" ]] && python3 -c "import sys; sys.exit(0 if float('$best') >= 0.95 else 1)"; then
  pass "classification: dev accuracy $best"
else
  fail "classification: '$(cat "$work/cls.log")' $(tail -3 "$work/cls.err")"
fi

# 2. eval reproduces it; predict writes the submission file.
eval_out="$("$electra" eval --task sst-2 --data-dir "$work/cls" --checkpoint "$work/out-cls/best" \
  --set finetune.device=cpu --set finetune.max_seq_len=32 2>&1)"
if grep -q "SST-2 dev: accuracy $best" <<<"$eval_out"; then
  pass "eval reproduces the best checkpoint's accuracy"
else
  fail "eval: $eval_out (expected $best)"
fi
"$electra" predict --task sst-2 --data-dir "$work/cls" --checkpoint "$work/out-cls/best" \
  --output "$work/pred" --set finetune.device=cpu --set finetune.max_seq_len=32 >/dev/null 2>&1
if [[ "$(head -1 "$work/pred/SST-2.tsv")" == $'index\tprediction' ]] &&
  [[ $(wc -l <"$work/pred/SST-2.tsv") -eq 11 ]]; then
  pass "predict writes SST-2.tsv"
else
  fail "predict: $(head -3 "$work/pred/SST-2.tsv" 2>&1)"
fi

# 3. Regression: Spearman rises.
"$electra" finetune --task sts-b --data-dir "$work/sts" "${common[@]}" --set tasks.sts-b.epochs=10 \
  --output "$work/out-sts" >"$work/sts.log" 2>"$work/sts.err"
if python3 - "$work/sts.err" <<'PY'; then pass "regression: Spearman rises"; else fail "regression: $(grep epoch "$work/sts.err" | grep dev)"; fi
import re, sys
values = [float(m) for m in re.findall(r"dev .*spearman ([-0-9.]+)", open(sys.argv[1]).read())]
print("spearman per epoch:", values)
sys.exit(0 if len(values) == 10 and max(values) >= 0.5 and max(values) > values[0] else 1)
PY

# 4. SQuAD through the command line (the learning itself: finetune_squad_test).
mkdir -p "$work/squad"
python3 - "$src/test/fixtures/squad/tiny-v1.1.json" "$work/squad/train-v1.1.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))  # a dev-style file: training takes each question's first answer
for article in data["data"]:
    for paragraph in article["paragraphs"]:
        for qa in paragraph["qas"]:
            qa["answers"] = qa["answers"][:1]
json.dump(data, open(sys.argv[2], "w"))
PY
cp "$src/test/fixtures/squad/tiny-v1.1.json" "$work/squad/dev-v1.1.json"
"$electra" finetune --task squad1.1 --data-dir "$work/squad" "${common[@]}" \
  --set finetune.max_seq_len=64 --set squad.max_query_length=24 --set finetune.epochs=1 \
  --output "$work/out-squad" \
  >"$work/squad.log" 2>"$work/squad.err"
squad_eval="$("$electra" eval --task squad1.1 --data-dir "$work/squad" \
  --checkpoint "$work/out-squad/best" --set finetune.device=cpu --set finetune.max_seq_len=64 \
  --set squad.max_query_length=24 \
  --output "$work/squad-pred.json" 2>&1)"
if grep -q "^SQuAD1.1 seed 1: best epoch 1: EM" "$work/squad.log" &&
  [[ -s "$work/out-squad/dev_predictions.json" && -s "$work/squad-pred.json" ]] &&
  grep -q "^SQuAD1.1 dev: EM" <<<"$squad_eval"; then
  pass "SQuAD finetune / eval through the CLI"
else
  fail "SQuAD CLI: $(cat "$work/squad.log") $(tail -2 "$work/squad.err") $squad_eval"
fi

# 5. Real SST-2 (subset) beats the majority class.
glue="$src/../shared/data/glue/SST-2"
if [[ -d "$glue" ]]; then
  "$electra" finetune --task sst-2 --data-dir "$glue" "${common[@]}" --set finetune.epochs=2 \
    --set finetune.max_seq_len=48 --set finetune.batch_size=32 --set finetune.lr=1e-3 \
    --max-train 4000 --max-eval 300 --output "$work/out-sst" >"$work/sst.log" 2>"$work/sst.err"
  majority="$(python3 - "$glue/dev.tsv" <<'PY'
import sys
labels = [l.rstrip("\n").split("\t")[-1] for l in open(sys.argv[1])][1:301]
print(max(labels.count("0"), labels.count("1")) / len(labels))
PY
)"
  acc="$(sed -n 's/^SST-2 seed 1: best epoch [0-9]*: accuracy \([0-9.]*\).*/\1/p' "$work/sst.log")"
  if [[ -n "$acc" ]] && python3 -c "import sys; sys.exit(0 if float('$acc') > float('$majority') else 1)"; then
    pass "SST-2 subset: accuracy $acc > majority $majority"
  else
    fail "SST-2 subset: accuracy '$acc' vs majority $majority: $(tail -2 "$work/sst.err")"
  fi
else
  echo "skipped: SST-2 subset (../shared/data/glue not found)"
fi

# 6. Bad input.
expect_error() {  # expect_error NAME PATTERN ARGS...
  local name="$1" pattern="$2"
  shift 2
  "$electra" "$@" >"$work/err.log" 2>&1
  local rc=$?
  if [[ $rc -eq 2 ]] && tail -1 "$work/err.log" | grep -q "error: .*$pattern"; then
    pass "$name"
  else
    fail "$name: exit $rc: $(cat "$work/err.log")"
  fi
}
expect_error "unknown task" "nosuchtask" finetune --task nosuchtask --data-dir "$work/cls" \
  --init "$work/pre"
expect_error "init without a model" "checkpoint" finetune --task sst-2 \
  --data-dir "$work/cls" --init "$work/cls"

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
