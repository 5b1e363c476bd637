#!/usr/bin/env bash
# The bad-input table: every file in cases/ is one bad input. Each case runs in a fresh copy of a
# small fixture (text, vocabulary, shards, a 2-update pre-training run, a fine-tuned model) and
# must end with exit code 2, exactly one error line naming the offending file (or key), within
# its time limit (a hang fails), and without changing any file that existed before it ran.
#
# A case file is bash that sets:
#   cmd=(...)      the electra arguments, run in the case's directory (the fixture copy)
#   names=(...)    strings the error line must contain (the file, key or directory)
# and may define setup() (prepares the bad input, may start helpers), teardown(), check() (more
# assertions after the run: prints what is wrong and returns non-zero), launcher=(...) (a
# command that runs "$electra" "${cmd[@]}", e.g. to set a ulimit), may_change=(...) (files the
# run may legitimately append to, such as metrics.jsonl) and limit=SECONDS (default 20). Fixture files, relative to the case directory: corpus.txt,
# vocab.txt, shards/ (with manifest.json), tiny.yaml (a 1-layer model; data.shards=shards,
# data.vocab=vocab.txt, checkpoint.dir=run, train.steps=4), run/ (checkpoint-00000001 and
# checkpoint-00000002 of a run stopped after 2 updates, metrics.jsonl), sst2/ (GLUE SST-2 fixture), ft/best (a model fine-tuned on it), squad/
# (train-v1.1.json and dev-v1.1.json). $electra is the binary, $src the source tree.
# Usage: run.sh ELECTRA_BINARY SOURCE_DIR [CASE_NAME_PATTERN]
set -uo pipefail
electra="$(realpath "$1")"
src="$(realpath "$2")"
only="${3:-}"
source "$src/test/common/e2e_common.sh"

fix="$work/fixture"
mkdir -p "$fix"
cd "$fix" || exit 1
python3 - <<'PY' >corpus.txt
import random
random.seed(7)
words = ("the of and a to in is was he for it with as his on be at by had are but from or "
         "have an they which one you were her all she there would their we him been has when "
         "who will more no if out so said what up its about into than them can only other").split()
for doc in range(60):
    for line in range(4):
        print(" ".join(random.choice(words) for _ in range(random.randint(6, 14))) + ".")
    print()
PY
setup_step() { "$@" >>"$work/fixture.log" 2>&1 || { echo "fixture: '$*' failed:"; tail -5 "$work/fixture.log"; exit 1; }; }
setup_step "$electra" build-vocab --input corpus.txt --vocab-size 120 --min-frequency 1 --output vocab.txt
setup_step "$electra" build-data --input corpus.txt --vocab vocab.txt --output shards --seq-len 16
cat >tiny.yaml <<YAML
model:
  preset: tiny
  vocab_size: $(wc -l <vocab.txt)
  embedding_size: 16
  hidden: 32
  layers: 1
  heads: 1
  ffn: 64
  max_positions: 16
data:
  shards: shards
  vocab: vocab.txt
train:
  batch_size: 4
  seq_len: 16
  steps: 4
  device: cpu
checkpoint:
  dir: run
  every: 1
  keep: 0
logging:
  every: 1
YAML
setup_step "$electra" pretrain --config tiny.yaml --stop-after 2
cp -r "$src/test/fixtures/glue/SST-2" sst2
setup_step "$electra" finetune --task sst-2 --data-dir sst2 --init run --output ft \
  --set finetune.device=cpu --set finetune.epochs=1 --set finetune.max_seq_len=16
mkdir -p squad
cp "$src/test/fixtures/squad/tiny-v1.1.json" squad/train-v1.1.json
cp "$src/test/fixtures/squad/tiny-v1.1.json" squad/dev-v1.1.json

# Every file under a directory with its checksum, and every directory (the lock file is
# bookkeeping of the run directory, not output).
snapshot() { (cd "$1" && find . -path ./.case -prune -o -name .lock -prune -o -print0 | sort -z |
  xargs -0 -I{} sh -c 'if [ -f "{}" ]; then sha256sum "{}"; elif [ -d "{}" ]; then echo "dir {}";
    else echo "special {}"; fi'); }

# Helpers for the cases.
# nan_into FILE: the first value of the first tensor of a safetensors FILE becomes NaN.
nan_into() {
  python3 - "$1" <<'PY'
import json, struct, sys
raw = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
first = min((v for k, v in header.items() if k != '__metadata__'), key=lambda v: v['data_offsets'][0])
assert first['dtype'] == 'F32'
at = 8 + n + first['data_offsets'][0]
raw[at:at + 4] = struct.pack('<f', float('nan'))
open(sys.argv[1], 'wb').write(raw)
PY
}
# json_set FILE KEY RAW: the value of "KEY" (a number) becomes the JSON text RAW (which may be
# out of range or not an integer: the file is edited as text).
json_set() {
  python3 - "$@" <<'PY'
import re, sys
path, key, raw = sys.argv[1:]
text = open(path).read()
new, n = re.subn(r'("%s":\s*)-?[0-9][0-9.eE+-]*' % re.escape(key), lambda m: m.group(1) + raw, text, count=1)
assert n == 1, (path, key)
open(path, 'w').write(new)
PY
}

cases=0
for case_file in "$src"/test/bad_input/cases/*.sh; do
  name="$(basename "$case_file" .sh)"
  [[ -n "$only" && "$name" != *$only* ]] && continue
  cases=$((cases + 1))
  dir="$work/cases/$name"
  mkdir -p "$work/cases"
  cp -r "$fix" "$dir"
  (
    cd "$dir" || exit 1
    unset -f setup teardown check
    cmd=()
    names=()
    launcher=()
    may_change=()
    limit=20
    source "$case_file"
    if declare -F setup >/dev/null; then setup || { echo "setup failed"; exit 1; }; fi
    mkdir -p .case
    snapshot . >.case/before
    timeout -k 5 "$limit" "${launcher[@]}" "$electra" "${cmd[@]}" >.case/stdout 2>.case/stderr
    rc=$?
    declare -F teardown >/dev/null && teardown
    snapshot . >.case/after
    errors="$(grep -c "error" .case/stderr)"
    problems=""
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
      problems+=" timed out after ${limit}s (hangs);"
    elif [[ $rc -ne 2 ]]; then
      problems+=" exit $rc, expected 2;"
    fi
    [[ $errors -eq 1 ]] || problems+=" $errors error lines, expected 1;"
    grep -q "internal error" .case/stderr && problems+=" an internal error;"
    for want in "${names[@]}"; do
      grep "error" .case/stderr | grep -qF -- "$want" || problems+=" the error does not name '$want';"
    done
    # Files that existed before and are gone or different afterwards (new files are allowed).
    changed="$(comm -23 <(sort .case/before) <(sort .case/after))"
    for allowed in "${may_change[@]}"; do
      changed="$(grep -vF -- "./$allowed" <<<"$changed")"
    done
    [[ -z "$changed" ]] || problems+=" existing files changed: $(head -3 <<<"$changed" | tr '\n' ' ');"
    if declare -F check >/dev/null; then
      more="$(check)" || problems+=" $more;"
    fi
    if [[ -n "$problems" ]]; then
      echo "FAIL $name:$problems"
      sed 's/^/    stderr: /' .case/stderr | tail -5
      exit 1
    fi
    echo "ok $name: $(grep "error" .case/stderr)"
  ) || failures=$((failures + 1))
done
echo "$cases cases, $failures failed"

# The other side of some cases: what still works, and what is repaired instead of refused.
if [[ -z "$only" ]]; then
  cp -r "$fix" "$work/good"
  cd "$work/good" || exit 1
  # Item 1: a lock held by a killed run is released by the kernel.
  "$electra" pretrain --config tiny.yaml --set train.steps=1000000 --set checkpoint.every=0 \
    --set checkpoint.dir=killed >killed.log 2>&1 &
  holder=$!
  for _ in $(seq 1 200); do [[ -e killed/metrics.jsonl ]] && break; sleep 0.05; done
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  if "$electra" pretrain --config tiny.yaml --set checkpoint.dir=killed >again.log 2>&1; then
    pass "the lock of a killed run is released"
  else
    fail "a run after a killed one: $(tail -2 again.log)"
  fi
  # Item 4: the updates a killed run logged after its last checkpoint leave metrics.jsonl on
  # resume (kept in metrics.jsonl.discarded): one curve. Losing checkpoint-4 is a kill after
  # update 4 was logged and before its checkpoint was complete.
  "$electra" pretrain --config tiny.yaml --set train.steps=4 --set checkpoint.every=2 \
    --set checkpoint.dir=curve >/dev/null 2>&1 || fail "4 updates"
  rm -rf curve/checkpoint-00000004
  "$electra" pretrain --config tiny.yaml --set train.steps=4 --set checkpoint.every=2 \
    --set checkpoint.dir=curve --resume curve >/dev/null 2>&1 || fail "resume at 2"
  steps() { python3 -c "import json,sys; print(' '.join(str(json.loads(l)['step']) for l in open(sys.argv[1])))" "$1"; }
  if [[ "$(steps curve/metrics.jsonl)" == "1 2 3 4" && "$(steps curve/metrics.jsonl.discarded)" == "3 4" ]]; then
    pass "metrics.jsonl is truncated to the resumed checkpoint"
  else
    fail "metrics.jsonl after resume: steps '$(steps curve/metrics.jsonl)', discarded '$(steps curve/metrics.jsonl.discarded 2>&1)'"
  fi
  # Item 7: what a dead run left half-written is removed, and named, at the next start.
  mkdir run/.checkpoint-00000003.tmp
  touch run/metrics.jsonl.tmp.4242
  "$electra" pretrain --config tiny.yaml --resume run >stale.log 2>&1 ||
    fail "resume with stale temporaries: $(tail -2 stale.log)"
  if [[ ! -e run/.checkpoint-00000003.tmp && ! -e run/metrics.jsonl.tmp.4242 ]] &&
    grep -q "removed run/.checkpoint-00000003.tmp" stale.log; then
    pass "stale temporaries are removed and named"
  else
    fail "stale temporaries: $(grep removed stale.log)"
  fi
  # Item 3: new data is trained on from a checkpoint's weights with --init (a new run).
  head -n 150 corpus.txt >half.txt
  "$electra" build-data --input half.txt --vocab vocab.txt --output half --seq-len 16 2>/dev/null
  if "$electra" pretrain --config tiny.yaml --set data.shards=half --set checkpoint.dir=from-init \
    --init run >init.log 2>&1 && grep -q "weights from .*checkpoint-00000004" init.log &&
    [[ -d from-init/checkpoint-00000004 ]]; then
    pass "--init starts a new run from a checkpoint's weights"
  else
    fail "--init: $(tail -2 init.log)"
  fi
  # Item 3: the trainer state records the shard set; item 6: --threads is capped with a message.
  if python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['shards']; sys.exit(0 if s and s[0]['name'] == 'shard-00000.bin' and s[0]['examples'] > 0 else 1)" \
    run/checkpoint-00000004/trainer_state.json; then
    pass "the trainer state records the shards"
  else
    fail "no shard set in trainer_state.json"
  fi
  if "$electra" build-data --input corpus.txt --vocab vocab.txt --output many --seq-len 16 \
    --threads 100000 >threads.log 2>&1 && grep -q "threads 100000 capped to" threads.log &&
    [[ -s many/manifest.json ]]; then
    pass "--threads is capped"
  else
    fail "--threads 100000: $(tail -2 threads.log)"
  fi
fi
((cases > 0 && failures == 0))
