#!/usr/bin/env bash
# scripts/demo.sh end to end with a short run (40 updates on 2 MB of text): it exits 0 and ends by
# naming a checkpoint whose discriminator/ holds an HF config and weights, the metrics and the
# plot (when matplotlib is present), and the discriminator against the all-original baseline.
# Usage: demo_test.sh ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
electra="$1"
src="$2"
source "$src/test/common/e2e_common.sh"
ELECTRA_BIN="$electra" DEMO_OUT="$work/demo" DEMO_CORPUS_MB=2 "$src/scripts/demo.sh" \
  --set train.steps=40 --set logging.every=10 --set checkpoint.every=20 >"$work/log" 2>&1 ||
  { echo "FAIL: demo.sh exited $?"; tail -5 "$work/log"; exit 1; }
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then pass "$1"; else fail "$1"; fi
}
checkpoint="$(sed -n 's/^  checkpoint: *\([^ ]*\) .*/\1/p' "$work/log")"
check "names the last checkpoint" test "$checkpoint" = "$work/demo/checkpoints/checkpoint-00000040"
check "its discriminator is an HF directory" test -f "$checkpoint/discriminator/config.json" -a \
  -f "$checkpoint/discriminator/model.safetensors"
check "names metrics.jsonl" grep -q "metrics: *$work/demo/checkpoints/metrics.jsonl" "$work/log"
if python3 -c "import matplotlib" 2>/dev/null; then
  check "names the plot" grep -q "plot: *$work/demo/checkpoints/metrics.png" "$work/log"
fi
check "compares the accuracy with the all-original baseline" \
  grep -qE "accuracy [0-9.]+ +vs [0-9.]+ for 'everything is original'" "$work/log"
check "compares the replaced-token recall with it" \
  grep -qE "replaced-token recall [0-9.]+ .*vs 0 for 'everything is original'" "$work/log"
((failures == 0)) && echo "all checks passed"
exit $((failures > 0))
