#!/usr/bin/env bash
# Throughput of `electra build-data` (tokenize + build examples + write shards) on the shared
# corpus, with 1 worker thread and with one per core, beside HF tokenizers' Rust
# BertWordPieceTokenizer tokenizing the same text on one thread (bench/hf_tokenizers_baseline.py).
# MB/s is of uncompressed text. The electra runs also read and decompress the input (on the
# calling thread) and write the shards; the baseline only tokenizes text already in memory.
#
# Usage: bench/build_data_bench.sh [--electra PATH] [--slice-mb N] [--shared DIR]
#   --slice-mb N  use only the first N MB of the concatenated corpus (default: all of it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
electra="$root/build/cpu/apps/electra"
shared="$root/../shared"
slice_mb=0
while [ $# -gt 0 ]; do
  case "$1" in
    --electra) electra="$2"; shift 2 ;;
    --slice-mb) slice_mb="$2"; shift 2 ;;
    --shared) shared="$2"; shift 2 ;;
    *) echo "usage: $0 [--electra PATH] [--slice-mb N] [--shared DIR]" >&2; exit 2 ;;
  esac
done
vocab="$shared/data/vocab/bert-base-uncased-vocab.txt"
corpus="$shared/data/corpus"
[ -x "$electra" ] || { echo "no electra binary at $electra (build it, or pass --electra)" >&2; exit 2; }
[ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
text="$work/corpus.txt"
if [ "$slice_mb" -gt 0 ]; then
  # Whole lines only: cut at the last newline of the slice. zstd stops on SIGPIPE when head is
  # done, which pipefail would report as a failure.
  { zstd -dc "$corpus"/*.txt.zst 2> /dev/null || true; } | head -c "$((slice_mb * 1000000))" |
    sed '$d' > "$text"
else
  zstd -dc "$corpus"/*.txt.zst > "$text"
fi
bytes=$(stat -c %s "$text")
cores=$(nproc)
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  cores: $cores"
echo "text: $bytes bytes ($( [ "$slice_mb" -gt 0 ] && echo "first $slice_mb MB of" ) $corpus)"

run_electra() {
  local threads=$1
  rm -rf "$work/out"
  local start end
  start=$(date +%s.%N)
  "$electra" build-data --input "$text" --vocab "$vocab" --output "$work/out" --seq-len 128 \
    --threads "$threads" 2> "$work/log.txt"
  end=$(date +%s.%N)
  awk -v b="$bytes" -v s="$start" -v e="$end" -v t="$threads" \
    'BEGIN { printf "electra build-data (%d worker thread%s + reader): %.2f s, %.1f MB/s\n", t, (t > 1 ? "s" : ""), e - s, b / (e - s) / 1e6 }'
}
run_electra 1
run_electra "$cores"
tail -1 "$work/log.txt"
python3 "$root/bench/hf_tokenizers_baseline.py" "$vocab" "$text"
