#!/usr/bin/env bash
# Configures, builds and runs the tests. With nvcc present: the `cuda` preset (every test; GPU tests
# are reported skipped without a GPU, and must run with one: nvidia-smi -L succeeds; the
# architecture check must run either way) and then the `cpu` preset with ELECTRA_CUDA=OFF and its
# unit tests, so both configurations are proven on every run. Without nvcc: the `cpu` preset only.
# Then, when clang++ links libFuzzer, the `fuzz` preset: each harness of test/fuzz fuzzed for
# ELECTRA_FUZZ_SECONDS (default 10).
#
#   scripts/test.sh              the above
#   scripts/test.sh --sanitize   instead: the `asan` preset (CPU, AddressSanitizer +
#                                UndefinedBehaviorSanitizer) over the unit, gradcheck and e2e labels
# The GPU tests on the CPU, through the SIMT emulator, are scripts/simt_check.sh (about 10 minutes
# an order on 2 cores after its build; not part of this run).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

# run_preset PRESET [CTEST ARGS]: configures, builds and tests; ctest's output is also kept in
# build/PRESET/ctest.log (refuse_skips reads it).
run_preset() {
  local preset=$1
  shift
  echo "== test.sh: preset $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
  ctest --preset "$preset" -j "$JOBS" "$@" | tee "build/$preset/ctest.log"
}

# refuse_skips PRESET NAME...: fails when the last ctest of PRESET reported a test NAME skipped.
refuse_skips() {
  local preset=$1 name skipped=()
  shift
  for name in "$@"; do
    grep -qE "Test +#[0-9]+: $name \.*\**Skipped" "build/$preset/ctest.log" && skipped+=("$name")
  done
  if ((${#skipped[@]})); then
    echo "test.sh: error: skipped but must run here: ${skipped[*]} (build/$preset/ctest.log)" >&2
    exit 1
  fi
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
  # On a machine with a GPU the GPU tests must run, as in scripts/gpu_check.sh: with
  # ELECTRA_EXPECT_GPU=1 one that cannot use the GPU fails with CUDA's error instead of skipping,
  # and one skipped for any other reason fails the run.
  gpu=0
  if nvidia-smi -L >/dev/null 2>&1; then
    gpu=1
    export ELECTRA_EXPECT_GPU=1
    echo "== test.sh: GPU tests must run on $(nvidia-smi -L | head -1)"
  fi
  run_preset cuda
  # cuda_architectures proves the sm_80/sm_90 machine code (scripts/setup.sh installs cuobjdump).
  must_run=(cuda_architectures)
  if ((gpu)); then
    mapfile -t -O 1 must_run < <(ctest --preset cuda -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *//p')
  fi
  refuse_skips cuda "${must_run[@]}"
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
