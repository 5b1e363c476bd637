# Set-up shared by the end-to-end scripts; source it after setting `electra` (the binary) and `src`
# (the source tree): a scratch directory $work removed on exit, pass/fail with a failure count,
# expect_error, tiny_pretrain, make_tiny_data, make_tiny_sst2 and make_tiny_cased_checkpoint.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# The pre-training arguments of the tiny runs on make_tiny_data's shards: electra-tiny shrunk to
# 2 layers of 64 (embedding 32, FFN 256), seq 64, batch 8, 100 CPU updates logged every 10, no
# periodic checkpoints. A later --set of the same key wins.
tiny_pretrain=(--config "$src/configs/electra-tiny.yaml"
  --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt"
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32 --set model.layers=2
  --set train.seq_len=64 --set train.batch_size=8 --set train.device=cpu
  --set train.steps=100 --set optimizer.lr=5e-4 --set schedule.warmup_steps=10
  --set logging.every=10 --set checkpoint.every=0)

# $work/corpus.txt, vocab.txt and shards/: 2 MB of English prose (../shared when present, else
# Debian's dict-gcide, installed by setup.sh), an 8000-token vocabulary and seq-64 shards.
make_tiny_data() {
  "$src/scripts/english_corpus.sh" "$work/corpus.txt" 2 || exit 1
  "$electra" build-vocab --input "$work/corpus.txt" --vocab-size 8000 \
    --output "$work/vocab.txt" >/dev/null 2>&1 || { echo "build-vocab failed"; exit 1; }
  "$electra" build-data --input "$work/corpus.txt" --vocab "$work/vocab.txt" \
    --output "$work/shards" --seq-len 64 >/dev/null 2>&1 || { echo "build-data failed"; exit 1; }
}

# $work/cls/{train,dev}.tsv: a tiny SST-2 (64 and 32 sentences whose last word gives the label)
# for `finetune --task sst-2 --data-dir "$work/cls"`.
make_tiny_sst2() {
  python3 - "$work" <<'PY'
import os, random, sys
work = sys.argv[1]
random.seed(3)
fill = "the man woman house river city king ship sea night day road horse letter friend door".split()
os.makedirs(f"{work}/cls", exist_ok=True)
for split, n in (("train", 64), ("dev", 32)):
    with open(f"{work}/cls/{split}.tsv", "w") as f:
        f.write("sentence\tlabel\n")
        for _ in range(n):
            label = random.randint(0, 1)
            words = random.sample(fill, 6) + ["happy" if label else "sad"]
            f.write(" ".join(words) + " \t" + str(label) + "\n")
PY
}

# make_tiny_cased_checkpoint STEPS: $work/corpus.txt (1 MB), a CASED 3000-token vocab.txt, seq-64
# shards/ and $work/pre, a 2-layer 64-wide ELECTRA pre-trained for STEPS updates on the CPU.
make_tiny_cased_checkpoint() {
  "$src/scripts/english_corpus.sh" "$work/corpus.txt" 1 || exit 1
  "$electra" build-vocab --input "$work/corpus.txt" --vocab-size 3000 --no-lowercase \
    --output "$work/vocab.txt" >/dev/null 2>&1 || { echo "build-vocab failed"; exit 1; }
  "$electra" build-data --input "$work/corpus.txt" --vocab "$work/vocab.txt" --no-lowercase \
    --output "$work/shards" --seq-len 64 >/dev/null 2>&1 || { echo "build-data failed"; exit 1; }
  "$electra" pretrain --config "$src/configs/electra-tiny.yaml" \
    --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt" \
    --set model.vocab_size=3000 --set model.hidden=64 --set model.ffn=128 \
    --set model.embedding_size=32 --set model.layers=2 --set train.seq_len=64 \
    --set train.batch_size=8 --set train.device=cpu --set train.steps="$1" \
    --set checkpoint.dir="$work/pre" --set checkpoint.every=0 >"$work/pre.log" 2>&1 ||
    { echo "pretrain failed: $(tail -2 "$work/pre.log")"; exit 1; }
}

# expect_error NAME PATTERN COMMAND ARGS...: `electra COMMAND ARGS...` exits 2 and its one error
# line, the last, is "electra COMMAND: error: ...PATTERN...".
expect_error() {
  local name="$1" pattern="$2" command="$3"
  shift 2
  "$electra" "$@" >"$work/err.log" 2>&1
  local rc=$?
  if [[ $rc -eq 2 ]] && [[ $(grep -c "error" "$work/err.log") -eq 1 ]] &&
    tail -1 "$work/err.log" | grep -q "^electra $command: error: .*$pattern"; then
    pass "$name"
  else
    fail "$name: exit $rc: $(cat "$work/err.log")"
  fi
}

# expect_resume_identical NAME REFERENCE PARTS PRETRAIN_ARGS...: `electra pretrain PRETRAIN_ARGS`
# into $work/NAME-resume, stopped after $resume_stop_after updates (default 50) and resumed, must
# write at update 100 the same model files as REFERENCE (the uninterrupted run's
# checkpoint-00000100) for each of PARTS ("discriminator" or "discriminator generator").
expect_resume_identical() {
  local name="$1" reference="$2" parts="$3"
  shift 3
  local dir="$work/$name-resume"
  if ! "$electra" pretrain "$@" --set checkpoint.dir="$dir" --stop-after "${resume_stop_after:-50}" \
    >/dev/null 2>&1 ||
    ! "$electra" pretrain "$@" --set checkpoint.dir="$dir" --resume "$dir" >"$dir.log" 2>&1; then
    fail "$name: stop and resume: $(tail -2 "$dir.log" 2>/dev/null)"
    return
  fi
  local part
  for part in $parts; do
    if ! cmp -s "$reference/$part/model.safetensors" \
      "$dir/checkpoint-00000100/$part/model.safetensors"; then
      fail "$name: the resumed run's $part differs"
      return
    fi
  done
  pass "$name: a resumed run equals the uninterrupted one"
}
