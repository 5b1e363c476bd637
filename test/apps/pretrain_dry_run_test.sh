#!/usr/bin/env bash
# electra pretrain --dry-run: plans Small, Base and Large for a GPU (train.device: cuda) on a
# machine without one, against an 80 GiB GPU (--gpu-memory), and tiny on the CPU; prints the
# memory by kind and whether it fits, and exits before reading any data (the configs' data paths
# do not exist here).
set -uo pipefail
electra=$1
src=$2
source "$src/test/common/e2e_common.sh"
cd "$work" || exit 1

for model in small base large; do
  out=$("$electra" pretrain --config "$src/configs/electra-$model.yaml" \
    --set train.device=cuda --dry-run --gpu-memory 80 2>&1)
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q "cuda, precision bf16" <<<"$out" &&
    grep -qE "^  (parameters|gradients|optimizer|activations|workspace|total) +[0-9]+ bytes" <<<"$out" &&
    [[ $(grep -cE "^  [a-z]+ +[0-9]+ bytes" <<<"$out") -eq 6 ]] &&
    grep -q "fits in a GPU of 80 GiB (--gpu-memory) (80.00 GiB): yes" <<<"$out"; then
    pass "$model plans for an 80 GiB GPU and fits"
  else
    fail "$model: exit $rc: $out"
  fi
done

# Without --gpu-memory and without a GPU the comparison is unknown, said so.
out=$("$electra" pretrain --config "$src/configs/electra-base.yaml" --set train.device=cuda \
  --dry-run 2>&1)
if [[ $? -eq 0 ]] && grep -q "fits: unknown (no GPU here" <<<"$out"; then
  pass "no GPU and no --gpu-memory: fits unknown"
else
  fail "unknown: $out"
fi

# A micro-batch twice as large takes more activation memory: the plan follows the config.
act() { grep "^  activations" <<<"$1" | awk '{print $2}'; }
small=$("$electra" pretrain --config "$src/configs/electra-small.yaml" --set train.device=cuda \
  --set train.micro_batch_size=32 --dry-run --gpu-memory 80 2>&1)
large=$("$electra" pretrain --config "$src/configs/electra-small.yaml" --set train.device=cuda \
  --set train.micro_batch_size=64 --dry-run --gpu-memory 80 2>&1)
if [[ -n "$(act "$small")" && $(act "$large") -gt $(act "$small") ]]; then
  pass "activations grow with the micro-batch"
else
  fail "activations: $small / $large"
fi

# train.overlap_generator gives the generator's backward a stream of its own, with a second
# cuBLASLt workspace: the plan counts it.
work_of() { grep "^  workspace" <<<"$1" | awk '{print $2}'; }
one=$("$electra" pretrain --config "$src/configs/electra-small.yaml" --set train.device=cuda \
  --set train.overlap_generator=false --dry-run --gpu-memory 80 2>&1)
two=$("$electra" pretrain --config "$src/configs/electra-small.yaml" --set train.device=cuda \
  --set train.overlap_generator=true --dry-run --gpu-memory 80 2>&1)
if [[ -n "$(work_of "$one")" && $(work_of "$two") -eq $((2 * $(work_of "$one"))) ]]; then
  pass "overlap_generator: a second cuBLASLt workspace in the plan"
else
  fail "workspace: $(work_of "$one") / $(work_of "$two")"
fi

# The CPU plans in f32 whatever train.precision says, against this machine's memory.
out=$("$electra" pretrain --config "$src/configs/electra-tiny.yaml" --set train.device=cpu \
  --dry-run 2>&1)
if [[ $? -eq 0 ]] && grep -q "cpu, precision f32" <<<"$out" &&
  grep -q "fits in this machine's free memory" <<<"$out"; then
  pass "CPU plan in f32"
else
  fail "cpu: $out"
fi

# The FLOPs of one update, per objective (models/flops.h; bench/ablation.sh reads this line): mlm
# has no generator and costs least, all-tokens-mlm adds the MLM head at every token and costs most.
flops() {
  "$electra" pretrain --config "$src/configs/electra-tiny.yaml" --set train.device=cpu \
    --set objective="$1" --dry-run 2>&1 | sed -n "s/^  FLOPs per update ($1): \([0-9]*\)$/\1/p"
}
electra_flops=$(flops electra) mlm_flops=$(flops mlm) all_flops=$(flops all-tokens-mlm)
if [[ -n "$electra_flops" && -n "$mlm_flops" && -n "$all_flops" ]] &&
  ((mlm_flops < electra_flops && electra_flops < all_flops)); then
  pass "FLOPs per update by objective: mlm $mlm_flops < electra $electra_flops < all-tokens-mlm $all_flops"
else
  fail "FLOPs per update: '$electra_flops' '$mlm_flops' '$all_flops'"
fi

[[ $failures -eq 0 ]]
