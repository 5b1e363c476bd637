# Set-up shared by the end-to-end scripts; source it after setting `electra` (the binary) and `src`
# (the source tree): a scratch directory $work removed on exit, pass/fail with a failure count,
# and make_tiny_data.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# $work/corpus.txt, vocab.txt and shards/: 2 MB of English prose (../shared when present, else
# Debian's dict-gcide, installed by setup.sh), an 8000-token vocabulary and seq-64 shards.
make_tiny_data() {
  "$src/scripts/english_corpus.sh" "$work/corpus.txt" 2 || exit 1
  "$electra" build-vocab --input "$work/corpus.txt" --vocab-size 8000 \
    --output "$work/vocab.txt" >/dev/null 2>&1 || { echo "build-vocab failed"; exit 1; }
  "$electra" build-data --input "$work/corpus.txt" --vocab "$work/vocab.txt" \
    --output "$work/shards" --seq-len 64 >/dev/null 2>&1 || { echo "build-data failed"; exit 1; }
}
