#!/usr/bin/env bash
# electra build-vocab --threads: vocab.txt is byte-identical at 1, 2 and 3 threads, on a corpus of
# two files (one zstd-compressed) spanning several of the word counter's 4 MB blocks, and the
# vocabulary is not trivial (merges beyond the alphabet happened).
set -uo pipefail
electra=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# About 6 MB of deterministic text: words spelled from the digits of a running counter, mixed case
# and accents (normalised by the counter), punctuation and a Chinese character (split off).
awk 'BEGIN {
  split("a b c d e f g h i j", letters, " ");
  for (line = 0; line < 90000; ++line) {
    out = "";
    for (w = 0; w < 9; ++w) {
      n = (line * 7919 + w * 104729) % 100003;
      word = "";
      while (n > 0) { word = word letters[n % 10 + 1]; n = int(n / 10) }
      out = out (w == 0 ? "The" : (w == 4 ? "Été," : "")) word " ";
    }
    print out "中 end.";
  }
}' >"$work/a.txt"
head -c 2000000 "$work/a.txt" | tac >"$work/b.txt"
zstd -q --rm "$work/b.txt" -o "$work/b.txt.zst" || fail "zstd"
for t in 1 2 3; do
  "$electra" build-vocab --input "$work/a.txt" --input "$work/b.txt.zst" --vocab-size 400 \
    --threads $t --output "$work/vocab$t.txt" 2>"$work/log$t" || { cat "$work/log$t"; fail "threads $t"; }
  grep -q "counted on $t threads" "$work/log$t" || fail "threads $t: $(cat "$work/log$t")"
done
[[ $(wc -l <"$work/vocab1.txt") -eq 400 ]] || fail "vocab1 has $(wc -l <"$work/vocab1.txt") lines"
grep -qx "the" "$work/vocab1.txt" || fail "no merged token 'the'"
cmp "$work/vocab1.txt" "$work/vocab2.txt" || fail "2 threads differ from 1"
cmp "$work/vocab1.txt" "$work/vocab3.txt" || fail "3 threads differ from 1"
"$electra" build-vocab --input "$work/a.txt" --vocab-size 400 --threads 5000 \
  --output "$work/x.txt" 2>"$work/err" && fail "--threads 5000 accepted"
grep -q -- "--threads" "$work/err" || fail "--threads 5000: $(cat "$work/err")"
echo "build-vocab: identical vocab.txt at 1, 2 and 3 threads"
