#!/usr/bin/env bash
# Configures, builds and runs the tests. With nvcc present: the `cuda` preset (every test; GPU tests
# are reported skipped without a GPU) and then the `cpu` preset with ELECTRA_CUDA=OFF and its unit
# tests, so both configurations are proven on every run. Without nvcc: the `cpu` preset only.
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

if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  run_preset cuda
  run_preset cpu -L unit
else
  run_preset cpu
fi
