#!/usr/bin/env bash
# Configures, builds and runs the tests. With nvcc present: the `cuda` preset (every test; GPU tests
# are reported skipped without a GPU) and then the `cpu` preset with ELECTRA_CUDA=OFF and its unit
# tests, so both configurations are proven on every run. Without nvcc: the `cpu` preset only.
# Then, when clang++ links libFuzzer, the `fuzz` preset: each harness of test/fuzz fuzzed for
# ELECTRA_FUZZ_SECONDS (default 10).
#
#   scripts/test.sh              the above
#   scripts/test.sh --sanitize   instead: the `asan` preset (CPU, AddressSanitizer +
#                                UndefinedBehaviorSanitizer) over the unit, gradcheck and e2e labels
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

run_preset() {
  local preset=$1
  shift
  echo "== test.sh: preset $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
  ctest --preset "$preset" -j "$JOBS" "$@"
}

# Whether clang++ can build and link a libFuzzer target (Debian: clang and libclang-rt-dev).
have_libfuzzer() {
  command -v clang++ >/dev/null || return 1
  local dir
  dir="$(mktemp -d)"
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    >"$dir/probe.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$dir/probe.cpp" -o "$dir/probe" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

if [[ "${1:-}" == "--sanitize" ]]; then
  run_preset asan
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/test.sh [--sanitize]" >&2
  exit 2
fi

if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  run_preset cuda
  run_preset cpu -L unit
else
  run_preset cpu
fi
if have_libfuzzer; then
  cmake --preset fuzz -DELECTRA_FUZZ_SECONDS="${ELECTRA_FUZZ_SECONDS:-10}" >/dev/null
  run_preset fuzz
else
  echo "== test.sh: fuzz skipped: clang++ cannot link -fsanitize=fuzzer (scripts/setup.sh installs clang)"
fi
