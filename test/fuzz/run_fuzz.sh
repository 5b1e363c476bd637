#!/usr/bin/env bash
# Fuzzes one libFuzzer harness for a bounded time: new inputs go to a scratch directory (the
# committed seed corpus is only read); a crash, sanitizer report, uncaught exception, timeout or
# memory blow-up fails the test and its input is kept in FINDINGS_DIR for reproduction
# (`HARNESS FILE` replays it).
# Usage: run_fuzz.sh HARNESS SEED_CORPUS_DIR SECONDS FINDINGS_DIR
set -uo pipefail
harness=$1
corpus=$2
seconds=$3
findings=$4
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$findings"
"$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$findings/" "$scratch" "$corpus" 2>"$scratch/log"
rc=$?
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|Done [0-9]+ runs)" "$scratch/log"
if [[ $rc -ne 0 ]]; then
  tail -40 "$scratch/log"
  echo "FAIL: $(basename "$harness") found a problem; the input is in $findings"
  exit 1
fi
echo "ok: $(basename "$harness") ran ${seconds}s without a finding"
