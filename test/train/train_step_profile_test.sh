#!/usr/bin/env bash
# bench/train_step --profile on the CPU (electra-tiny, a small batch): a PROFILE line whose launches
# are the sum of the part rows', a row per model part, GEMM rows labelled with their shapes and a
# FLOP rate, the ops' and the outside time adding up to the update; without --profile no profile.
# --overlap-generator: stated in RESULT, the same loss as without it (the CPU runs the split
# backward in program order), and refused beside --profile (which times ops on one stream).
set -uo pipefail
bin=$1
fail() {
  echo "FAILED: $*"
  echo "--- output:"
  echo "$out"
  exit 1
}
out=$("$bin" --model tiny --batch 2 --seq-len 32 --warmup 0 --repeats 1 --profile 2>&1) ||
  fail "train_step --profile exited $?"
profile=$(grep '^PROFILE ' <<<"$out") || fail "no PROFILE line"
launches=$(sed -n 's/.* launches=\([0-9]*\) .*/\1/p' <<<"$profile")
[[ -n $launches && $launches -gt 0 ]] || fail "no launch count in: $profile"
# Part rows: part, "(all", "ops)", launches, total_ms, share%, GB/s, TFLOP/s.
parts=$(awk '$2 == "(all" {sum += $4; n++} END {print n, sum}' <<<"$out")
[[ $parts == "5 $launches" ]] || fail "5 parts with $launches launches expected, got $parts"
for part in other embeddings generator discriminator optimizer; do
  grep -q "^$part  *(all ops)" <<<"$out" || fail "no row for part $part"
done
grep -Eq '^generator +matmul +[0-9]+x[0-9]+x[0-9]+ [NT][NT].* [0-9.e+-]+$' <<<"$out" ||
  fail "no generator GEMM row with a shape and a FLOP rate"
shares=$(awk '$1 == "(ops)" {s += $4} $1 == "(outside" {s += $8} END {printf "%.0f", s}' <<<"$out")
[[ $shares == 100 ]] || fail "the ops' and the outside shares add up to $shares%, not 100%"
plain=$("$bin" --model tiny --batch 2 --seq-len 32 --warmup 0 --repeats 1 2>&1) ||
  fail "train_step exited $?"
grep -q '^PROFILE' <<<"$plain" && fail "a profile without --profile"
grep -q '^RESULT ' <<<"$plain" || fail "no RESULT line without --profile"
overlap=$("$bin" --model tiny --batch 2 --seq-len 32 --warmup 0 --repeats 1 --overlap-generator 2>&1) ||
  fail "train_step --overlap-generator exited $?"
grep -q ' overlap_generator=1 ' <<<"$overlap" || fail "no overlap_generator=1 in: $overlap"
grep -q ' overlap_generator=0 ' <<<"$plain" || fail "no overlap_generator=0 in: $plain"
loss_of() { sed -n 's/^RESULT .* loss=\([0-9.e+-]*\).*/\1/p' <<<"$1"; }
[[ -n $(loss_of "$plain") && $(loss_of "$overlap") == $(loss_of "$plain") ]] ||
  fail "loss $(loss_of "$overlap") with --overlap-generator, $(loss_of "$plain") without"
# --no-fused-layers: said in the RESULT line; on the CPU (which never fuses) the same loss.
unfused=$("$bin" --model tiny --batch 2 --seq-len 32 --warmup 0 --repeats 1 --no-fused-layers 2>&1) ||
  fail "train_step --no-fused-layers exited $?"
grep -q ' fused_layers=0 ' <<<"$unfused" && grep -q ' fused_layers=1 ' <<<"$plain" ||
  fail "fused_layers=0 / =1 not in: $unfused / $plain"
[[ $(loss_of "$unfused") == $(loss_of "$plain") ]] ||
  fail "loss $(loss_of "$unfused") with --no-fused-layers, $(loss_of "$plain") without"
refused=$("$bin" --model tiny --profile --overlap-generator 2>&1)
[[ $? -eq 2 && $refused == *"drop --overlap-generator"* ]] ||
  fail "--profile --overlap-generator not refused: $refused"
echo "passed: $profile"
