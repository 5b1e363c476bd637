#!/usr/bin/env bash
# scripts/plot_metrics.py: a small metrics.jsonl (with an unknown key, a line without step and a
# blank line) becomes a PNG; a line that is not JSON is exit 2; without matplotlib, exit 3.
# Exit 77 (ctest: skipped) when python3 or matplotlib is missing here.
set -uo pipefail
script=$1
command -v python3 >/dev/null || { echo "skipped: python3 not found"; exit 77; }
python3 -c "import matplotlib" 2>/dev/null || { echo "skipped: matplotlib not installed"; exit 77; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/metrics.jsonl" <<'JSON'
{"step": 10, "gen_loss": 9.1, "disc_loss": 0.69, "gen_acc": 0.02, "disc_acc": 0.85, "replaced_frac": 0.14, "lr": 1e-4, "tokens_per_s": 1000}
{"event": "checkpoint", "dir": "runs/x"}

{"step": 20, "gen_loss": 7.5, "disc_loss": 0.45, "gen_acc": 0.10, "disc_acc": 0.88, "replaced_frac": 0.12, "lr": 2e-4}
{"step": 30, "gen_loss": 6.2, "disc_loss": 0.38, "gen_acc": 0.18, "disc_acc": 0.90, "replaced_frac": 0.10, "lr": 3e-4}
JSON
fail() { echo "FAIL: $*"; exit 1; }

python3 "$script" "$dir/metrics.jsonl" -o "$dir/out.png" || fail "plot_metrics.py exited $?"
[[ -s "$dir/out.png" ]] || fail "no PNG written"
magic=$(head -c 8 "$dir/out.png" | od -An -tx1 | tr -d ' \n')
[[ $magic == 89504e470d0a1a0a ]] || fail "out.png does not start with the PNG signature ($magic)"

# Default output: next to the input.
python3 "$script" "$dir/metrics.jsonl" >/dev/null || fail "default output: exit $?"
[[ -s "$dir/metrics.png" ]] || fail "no metrics.png next to the input"

echo '{"step": 40, "gen_loss": ' >>"$dir/metrics.jsonl"
out=$(python3 "$script" "$dir/metrics.jsonl" -o "$dir/bad.png" 2>&1)
code=$?
[[ $code -eq 2 ]] || fail "a broken line should exit 2, got $code"
grep -q "metrics.jsonl:6:" <<<"$out" || fail "the error should name line 6: $out"
# Without matplotlib (a stand-in package that fails to import): exit 3 and the install hint.
mkdir -p "$dir/fake/matplotlib"
echo 'raise ImportError("no matplotlib")' >"$dir/fake/matplotlib/__init__.py"
out=$(PYTHONPATH="$dir/fake" python3 "$script" "$dir/metrics.jsonl" -o "$dir/x.png" 2>&1)
code=$?
[[ $code -eq 3 ]] || fail "without matplotlib the exit code should be 3, got $code"
grep -q "matplotlib is not installed; pip install matplotlib" <<<"$out" || fail "hint missing: $out"
echo "plot_metrics: ok"
