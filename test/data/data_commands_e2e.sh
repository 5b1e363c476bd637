#!/usr/bin/env bash
# End-to-end: the electra binary trains a vocabulary, builds shards and describes them, on a small
# generated corpus in a temporary directory; bad arguments give a one-line error and exit code 2.
# Usage: data_commands_e2e.sh PATH/TO/electra
set -euo pipefail
electra="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# 60 documents of 25 sentences from a small word list (deterministic).
words=(the river city music house north school team family played built known year world first
       small great church film album water light stone garden)
seed=1
for doc in $(seq 60); do
  for s in $(seq 25); do
    line=""
    for w in $(seq $(( 4 + (doc * 7 + s * 3) % 11 ))); do
      seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
      line+="${words[$(( seed % ${#words[@]} ))]} "
    done
    echo "${line}."
  done
  echo
done > "$dir/corpus.txt"

"$electra" build-vocab --input "$dir/corpus.txt" --vocab-size 200 --output "$dir/vocab.txt" \
  2> "$dir/vocab.log" || fail "build-vocab exited $?: $(cat "$dir/vocab.log")"
[ "$(head -1 "$dir/vocab.txt")" = "[PAD]" ] || fail "vocab.txt does not start with [PAD]"
[ "$(wc -l < "$dir/vocab.txt")" -le 200 ] || fail "vocab.txt has more than 200 tokens"

"$electra" build-data --input "$dir/corpus.txt" --vocab "$dir/vocab.txt" --output "$dir/shards" \
  --seq-len 64 --threads 2 --seed 3 2> "$dir/data.log" ||
  fail "build-data exited $?: $(cat "$dir/data.log")"
[ -f "$dir/shards/shard-00000.bin" ] || fail "no shard written"

"$electra" info "$dir/shards" > "$dir/info.txt" || fail "info exited $?"
grep -q "seq_len: 64" "$dir/info.txt" || fail "info does not show seq_len: $(cat "$dir/info.txt")"
grep -q "single-segment fraction" "$dir/info.txt" || fail "info shows no statistics"

# Bad arguments: exit code 2 and a single line on stderr.
check_usage_error() {
  local rc=0
  "$electra" "$@" > /dev/null 2> "$dir/err.txt" || rc=$?
  [ "$rc" -eq 2 ] || fail "'electra $*' exited $rc, expected 2"
  [ "$(wc -l < "$dir/err.txt")" -eq 1 ] || fail "'electra $*' printed: $(cat "$dir/err.txt")"
}
check_usage_error build-data --input "$dir/corpus.txt" --vocab "$dir/vocab.txt" --output "$dir/x" --seq-len abc
check_usage_error build-vocab --input "$dir/corpus.txt" --output "$dir/v2.txt" --vocab-size 100 --frobnicate
check_usage_error build-data --input "$dir/missing.txt" --vocab "$dir/vocab.txt" --output "$dir/y"
check_usage_error info "$dir/corpus.txt"
echo "data_commands_e2e: ok"
