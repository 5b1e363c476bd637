#!/usr/bin/env bash
# The data bench/table1_window.sh needs on a device, in one folder small enough to carry
# (everything that travels, checkout included, is limited to 64 MiB):
#   DIR/corpus/   every .txt.zst of SRC/corpus: as shipped (32 MiB for the two corpora), or with
#                 --corpus-mb N the first N MB of each file's text (whole lines), recompressed
#                 (about 0.26 MB per MB of text)
#   DIR/vocab.txt SRC/vocab/bert-base-uncased-vocab.txt
#   DIR/glue/     train.tsv and dev.tsv of CoLA, SST-2, MRPC, STS-B, RTE (7.4 MiB)
# It prints the folder's size and fails when it exceeds --max-mib (default 48: the bundle and the
# checkout need the rest). Then: run(carry=["carry/table1", ...]) and table1_window.sh --data DIR.
# Usage: bench/table1_pack.sh DIR [--data SRC (default ../shared/data)] [--corpus-mb N] [--max-mib 48]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
die() {
  echo "table1_pack.sh: $*" >&2
  exit 2
}
[[ $# -ge 1 && "$1" != -* ]] || die "usage: bench/table1_pack.sh DIR [--data SRC] [--corpus-mb N] [--max-mib 48]"
dir="$1"
shift
src="$root/../shared/data"
corpus_mb=0
max_mib=48
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --data) src="$2" ;;
    --corpus-mb) corpus_mb="$2" ;;
    --max-mib) max_mib="$2" ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[[ "$corpus_mb" =~ ^[0-9]+$ ]] || die "--corpus-mb $corpus_mb: not a whole number"
[[ "$max_mib" =~ ^[0-9]+$ ]] || die "--max-mib $max_mib: not a whole number"
compgen -G "$src/corpus/*.txt.zst" >/dev/null || die "--data $src: no corpus/*.txt.zst"
[[ -f "$src/vocab/bert-base-uncased-vocab.txt" ]] || die "--data $src: no vocab/bert-base-uncased-vocab.txt"
rm -rf "$dir"
mkdir -p "$dir/corpus" "$dir/glue"
for f in "$src"/corpus/*.txt.zst; do
  if ((corpus_mb == 0)); then
    cp "$f" "$dir/corpus/"
  else
    # The first N MB, less the last (partial) line.
    # (zstd's SIGPIPE when head has enough is not an error.)
    { zstd -dc "$f" || true; } | head -c $((corpus_mb * 1000000)) | sed '$d' | zstd -q -19 -o "$dir/corpus/$(basename "$f")"
  fi
done
cp "$src/vocab/bert-base-uncased-vocab.txt" "$dir/vocab.txt"
for task in CoLA SST-2 MRPC STS-B RTE; do
  mkdir -p "$dir/glue/$task"
  cp "$src/glue/$task/train.tsv" "$src/glue/$task/dev.tsv" "$dir/glue/$task/" ||
    die "--data $src: no glue/$task/train.tsv and dev.tsv"
done
kib="$(du -sk "$dir" | cut -f1)"
echo "table1_pack.sh: $dir holds $((kib / 1024)) MiB (corpus $(du -sh "$dir/corpus" | cut -f1), glue $(du -sh "$dir/glue" | cut -f1))"
((kib <= max_mib * 1024)) || die "$dir is $((kib / 1024)) MiB, over --max-mib $max_mib: use --corpus-mb"
