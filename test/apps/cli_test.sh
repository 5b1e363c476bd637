#!/usr/bin/env bash
# The `electra` binary's contract: help and version succeed; misuse is one line on stderr and
# exit 2; version, and pretrain first, name the GPUs, the driver and the CUDA libraries found at
# run time.
set -uo pipefail
electra=$(realpath "$1")
passed=0
failed=0

expect() {  # expect NAME EXIT_CODE PATTERN COMMAND... : exit code and a line matching PATTERN
  local name=$1 code=$2 pattern=$3
  shift 3
  local out
  out=$("$@" 2>&1)
  local got=$?
  if [[ $got -eq $code ]] && grep -qE "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $got (want $code), output: $out"
  fi
}

expect help 0 "^usage: electra <command>" "$electra" --help
expect version 0 "^electra [0-9]+\.[0-9]+\.[0-9]+$" "$electra" version
expect version-flag 0 "^cuda: " "$electra" --version
expect no-args 2 "^usage:" "$electra"
expect unknown 2 "^electra: error: unknown command 'frobnicate'" "$electra" frobnicate
expect extra-arg 2 "^electra version: error: version takes no arguments \(got 'x'\)$" \
  "$electra" version x
lines=$("$electra" frobnicate 2>&1 | wc -l)
[[ $lines -eq 1 ]] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL one-line"; }

# What the binary runs with, found at run time: its GPUs (or none, and why), the driver, and the
# CUDA runtime, cuBLAS, cuBLASLt and NCCL versions (a CPU-only build has none of the libraries).
expect version-gpus 0 "^(gpus: none found \(.+\)|gpu 0: .+ \(sm_[0-9]+, [0-9]+ GiB\))$" \
  "$electra" version
cuda_version="CUDA [0-9]+\.[0-9]+"
driver="[0-9]+(\.[0-9]+)+"
expect version-driver 0 "^driver: (none found|$driver( \($cuda_version\))?|$cuda_version)$" \
  "$electra" version
if "$electra" version | grep -q "^cuda: built for"; then
  expect version-cudart 0 "^cuda runtime: [0-9]+\.[0-9]+$" "$electra" version
  expect version-cublas 0 "^cublas: [0-9]+\.[0-9]+\.[0-9]+$" "$electra" version
  expect version-cublaslt 0 "^cublasLt: [0-9]+\.[0-9]+\.[0-9]+$" "$electra" version
  expect version-nccl 0 "^nccl: ([0-9]+\.[0-9]+\.[0-9]+|not built \(.+\))$" "$electra" version
else
  for lib in "cuda runtime" cublas cublasLt nccl; do
    expect "version-$lib" 0 "^$lib: not built \(ELECTRA_CUDA=OFF\)$" "$electra" version
  done
fi

# `electra pretrain` prints the same (what follows the build's lines) first, on stderr; a dry run
# reads no data.
src="$(cd "$(dirname "$0")/../.." && pwd)"
report=$("$electra" version | sed '1,/^mpi: /d')
dir=$(mktemp -d)
first=$(cd "$dir" && "$electra" pretrain --config "$src/configs/electra-tiny.yaml" \
  --set train.device=cpu --dry-run 2>&1 >/dev/null | head -n "$(wc -l <<<"$report")")
rm -rf "$dir"
if [[ -n $report && "$first" == "$(sed 's/^/pretrain: /' <<<"$report")" ]]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  printf 'FAIL pretrain-report: the first lines of stderr:\n%s\nare not:\n%s\n' "$first" "$report"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
