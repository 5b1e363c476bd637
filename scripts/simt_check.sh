#!/usr/bin/env bash
# Runs the GPU tests on the host's SIMT emulator (test/simt; docs/ARCHITECTURE.md, "The SIMT
# emulator"): every CUDA source compiled as C++ (the simt preset), the kernels run by fibers on
# the CPU, each GPU test against its CPU reference as on a GPU. It cannot time anything or find
# what only real hardware shows (an instruction's speed or rounding), but a wrong index, fragment
# layout, shuffle, missing barrier or unwritten output fails here, without a GPU (a race that
# neither order exposes under --tsan). Run it before spending a GPU window on kernels that never
# ran on one.
#
# usage: scripts/simt_check.sh [--order forward|reverse|both] [--asan | --tsan] [-R REGEX]
#                              [-E REGEX] [-j N] [--timeout S]
#   --order    the blocks' and threads' order (default both, but forward with --tsan: a missing
#              barrier shows in one)
#   --asan     under AddressSanitizer (the simt-asan preset): a kernel's access past a buffer's
#              end or into freed memory fails, as compute-sanitizer's memcheck would say
#   --tsan     under ThreadSanitizer (the simt-tsan preset; one order is enough): two threads of
#              a block touching the same memory, one writing, with no barrier between them fail
#              as a data race, as compute-sanitizer's racecheck would say. Its shadow memory
#              multiplies a test's: on 24 GB leave out the Base-sized cases
#              (-E 'electra_base|base_2x512'), of which one is over 12 GB
#   -R         only the GPU tests whose name matches REGEX (ctest -R)
#   -E         leave out the GPU tests whose name matches REGEX (ctest -E), e.g. 'base_2x512'
#              under --asan, where one bf16 flash case at T = 512 takes about 9 minutes
#   -j         tests at once (default: the number of cores)
#   --timeout  seconds per test (default 3600; the attention test at T = 512 takes the longest)
set -euo pipefail
cd "$(dirname "$0")/.."

orders=()
preset=simt
exclude=""
regex=""
jobs=$(nproc)
timeout=3600
while [[ $# -gt 0 ]]; do
  case "$1" in
    --order)
      case "${2:-}" in
        forward | reverse) orders=("$2") ;;
        both) orders=(forward reverse) ;;
        *) echo "simt_check.sh: --order takes forward, reverse or both, not '${2:-}'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --asan) preset=simt-asan; shift ;;
    --tsan) preset=simt-tsan; shift ;;
    -E) exclude="${exclude:+$exclude|}${2:?simt_check.sh: -E needs a regular expression}"; shift 2 ;;
    -R) regex="${2:?simt_check.sh: -R needs a regular expression}"; shift 2 ;;
    -j) jobs="${2:?simt_check.sh: -j needs a number}"; shift 2 ;;
    --timeout) timeout="${2:?simt_check.sh: --timeout needs seconds}"; shift 2 ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "simt_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# ThreadSanitizer finds a race in either order; the other checks need both.
if [[ ${#orders[@]} -eq 0 ]]; then
  if [[ "$preset" == simt-tsan ]]; then orders=(forward); else orders=(forward reverse); fi
fi

# The GPU tests to run (ctest's selection).
select=(-L gpu)
[[ -n "$regex" ]] && select+=(-R "$regex")
[[ -n "$exclude" ]] && select+=(-E "$exclude")

cmake --preset "$preset" >/dev/null
# Every GPU test executable has a ctest entry named after it, and the op harness's per-case
# entries are "<target>:<case>": build the targets of the selected entries (a -R that matches
# cases only, e.g. 'base_2x512', still builds their executable).
mapfile -t tests < <(ctest --test-dir build/$preset -N "${select[@]}" |
  sed -n 's/^ *Test *#[0-9]*: \([A-Za-z0-9_]*\)\(:.*\)\{0,1\}$/\1/p' | sort -u)
if [[ ${#tests[@]} -eq 0 ]]; then
  echo "simt_check.sh: no GPU test matches '${regex}'" >&2
  exit 2
fi
echo "simt_check.sh: building ${#tests[@]} GPU test executables for the SIMT emulator"
cmake --build build/$preset -j "$jobs" --target "${tests[@]}"

status=0
for order in "${orders[@]}"; do
  echo "simt_check.sh: ${order} order"
  SIMT_ORDER="$order" ctest --test-dir build/$preset "${select[@]}" -j "$jobs" \
    --timeout "$timeout" --output-on-failure || status=1
done
exit "$status"
