#!/usr/bin/env bash
# English prose for the demo and the end-to-end tests, from what the machine already has (nothing
# is downloaded at run time and no corpus is committed to the repository):
#   1. ../shared/data/corpus (the project's shared corpus: Gutenberg books, then Wikipedia) when
#      present;
#   2. else the GCIDE dictionary of Debian's dict-gcide (Webster's 1913 and WordNet definitions),
#      which scripts/setup.sh installs, one definition paragraph per line and a blank line (a
#      document boundary for build-data) every 50 paragraphs.
# Usage: scripts/english_corpus.sh OUT.txt [MAX_MB [SOURCE]]
#   MAX_MB: keep the first MAX_MB MB (0, the default: all); SOURCE: auto (default), shared, gcide
# Prints the source it used on stderr; exits 1 with one line when there is none.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: english_corpus.sh OUT.txt [MAX_MB]}"
max_mb="${2:-0}"
source="${3:-auto}"
shared="$root/../shared/data/corpus"
gcide=/usr/share/dictd/gcide.dict.dz

# Keeps the first MAX_MB MB of stdin, ending at a whole line. (The producers end with "|| true": head
# closing the pipe early is not an error; an empty result is checked at the end.)
head_mb() {
  if ((max_mb > 0)); then head -c $((max_mb * 1000000)) | sed '$d'; else cat; fi
}

have_shared=0
[[ -d "$shared" ]] && compgen -G "$shared/*.txt.zst" >/dev/null && have_shared=1
case "$source" in
  auto) ;;
  shared) ((have_shared)) || { echo "english_corpus: error: no $shared" >&2; exit 1; } ;;
  gcide) have_shared=0 ;;
  *) echo "english_corpus: error: unknown source '$source' (auto, shared or gcide)" >&2; exit 1 ;;
esac
if ((have_shared)); then
  echo "english_corpus: $shared" >&2
  # Sorted: gutenberg-en before enwiki (a prefix is book prose).
  files=("$shared"/gutenberg*.txt.zst "$shared"/enwiki*.txt.zst)
  { zstd -dcq "${files[@]}" || true; } | head_mb >"$out"
elif [[ -f "$gcide" ]]; then
  echo "english_corpus: $gcide (dict-gcide)" >&2
  { zcat "$gcide" | awk '
    function flush() {
      if (n >= 8) { print par; if (++printed % 50 == 0) print "" }
      par = ""; n = 0; depth = 0
    }
    /^[^ ]/ { flush(); next }          # a headword line starts in column 0
    /^ *$/ { flush(); next }
    {
      if ($0 ~ /^ *(Syn|Note):/) flush()
      line = ""
      for (i = 1; i <= length($0); i++) {  # drop [etymologies] and [source tags], even
        c = substr($0, i, 1)                # across lines, and the {cross-reference} braces
        if (c == "[") depth++
        else if (c == "]" && depth > 0) depth--
        else if (depth == 0 && c != "{" && c != "}") line = line c
      }
      gsub(/--[A-Z][A-Za-z.]*/, "", line)  # citation authors: --Shak.
      gsub(/^ +| +$/, "", line)
      gsub(/  +/, " ", line)
      if (line == "") next
      par = par (par == "" ? "" : " ") line
      n += split(line, words, " ")
    }
    END { flush() }' || true; } | head_mb >"$out"
else
  echo "english_corpus: error: no English text: neither $shared nor $gcide (run scripts/setup.sh," \
    "which installs dict-gcide)" >&2
  exit 1
fi
[[ -s "$out" ]] || { echo "english_corpus: error: wrote nothing to $out" >&2; exit 1; }
