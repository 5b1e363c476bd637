#!/usr/bin/env bash
# The `electra` binary's contract: help and version succeed; misuse is one line on stderr and exit 2.
set -uo pipefail
electra=$1
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
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
