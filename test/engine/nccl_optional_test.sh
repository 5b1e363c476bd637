#!/usr/bin/env bash
# NCCL is optional (CMakeLists.txt, cmake/FindNCCL.cmake; issue 35): only a run on several GPUs
# needs it and the CUDA toolkit does not ship it. Checks, configuring only (no build):
#   1. the real project configures for CUDA with NCCL hidden (CMAKE_DISABLE_FIND_PACKAGE_NCCL),
#      says "NCCL OFF", and builds the stand-in communicator_nccl_missing.cpp instead of the
#      communicator, with no NCCL on any link line;
#   2. ELECTRA_NCCL=ON with NCCL hidden is a configure error that says what to do;
#   3. no source but engine/communicator_nccl_cuda.cpp includes nccl.h, so the build without it
#      compiles whatever headers the machine has;
#   4. FindNCCL finds NVIDIA's nvidia-nccl-cu13 wheel where scripts/setup.sh installs it: a
#      stand-in wheel (nvidia/nccl/{include,lib}) named by a stand-in python3, with every other
#      search place off, gives its library, its include directory and the header's version
#      (cmake/nccl_probe, the project scripts/setup.sh asks).
# What a launch of several GPU ranks does in that build is communicator_nccl_missing_test.
# Usage: nccl_optional_test.sh SOURCE_DIR CMAKE GENERATOR MAKE_PROGRAM CXX_COMPILER CUDA_COMPILER
set -uo pipefail
src=$1 cmake=$2 generator=$3 make_program=$4 cxx=$5 nvcc=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

# 1. Configure without NCCL (tests off: the engine's sources are what matters).
if "$cmake" -S "$src" -B "$work/build" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DELECTRA_CUDA=ON -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON \
  -DBUILD_TESTING=OFF >"$work/configure.log" 2>&1; then
  grep -q "electra: CUDA ON" "$work/configure.log" || fail "CUDA is not ON"
  grep -q "electra: NCCL OFF" "$work/configure.log" || fail "no 'NCCL OFF' line"
  commands="$work/build/compile_commands.json"
  grep -q "engine/communicator_nccl_missing.cpp" "$commands" || fail "the stand-in is not built"
  ! grep -q "communicator_nccl_cuda.cpp" "$commands" || fail "the NCCL communicator is built"
  ! grep -rqi "libnccl" "$work/build" --include=build.ninja --include=link.txt ||
    fail "a link line names NCCL"
  echo "ok: configured for CUDA without NCCL"
else
  fail "configure without NCCL failed:"
  tail -20 "$work/configure.log"
fi

# 2. Asked for, NCCL must be found.
if "$cmake" -S "$src" -B "$work/build" -DELECTRA_NCCL=ON >"$work/on.log" 2>&1; then
  fail "ELECTRA_NCCL=ON configured without NCCL"
elif grep -q "ELECTRA_NCCL=ON but NCCL was not found" "$work/on.log" &&
  grep -q "scripts/setup.sh" "$work/on.log"; then
  echo "ok: ELECTRA_NCCL=ON without NCCL is an error naming scripts/setup.sh"
else
  fail "ELECTRA_NCCL=ON: $(grep -A3 "CMake Error" "$work/on.log")"
fi

# 3. nccl.h is included by the NCCL communicator alone.
includers=$(cd "$src" && grep -rlE '#include *[<"]nccl\.h[>"]' --include='*.h' --include='*.cpp' \
  --include='*.cu' --include='*.cuh' engine kernels models optim data train apps test bench)
if [[ $includers == "engine/communicator_nccl_cuda.cpp" ]]; then
  echo "ok: only engine/communicator_nccl_cuda.cpp includes nccl.h"
else
  fail "files including nccl.h: $includers"
fi

# 4. The wheel's layout: include/nccl.h and lib/libnccl.so.2 only (no libnccl.so link).
wheel="$work/site-packages/nvidia/nccl"
mkdir -p "$wheel/include" "$wheel/lib" "$work/bin"
printf '#define NCCL_%s\n' "MAJOR 2" "MINOR 30" "PATCH 7" >"$wheel/include/nccl.h"
: >"$wheel/lib/libnccl.so.2"
cat >"$work/bin/python3" <<PY
#!/bin/sh
echo "$wheel"
PY
chmod +x "$work/bin/python3"
# The stand-in python3 is named as the one found on the PATH (NCCL_PYTHON3), and every search
# place but the wheel's is off (CMake's own, the PATH's, NCCL_ROOT's, the CUDA toolkit's), so
# only the wheel can be found.
if "$cmake" -S "$src/cmake/nccl_probe" -B "$work/probe" -G "$generator" \
  -DCMAKE_MAKE_PROGRAM="$make_program" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNCCL_PYTHON3="$work/bin/python3" -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
  -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF \
  -DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=OFF -DCMAKE_FIND_USE_PACKAGE_ROOT_PATH=OFF \
  >"$work/probe.log" 2>&1 &&
  grep -qF "found=TRUE version=2.30.7 library=$wheel/lib/libnccl.so.2 include=$wheel/include" \
    "$work/probe.log"; then
  echo "ok: FindNCCL finds the nvidia-nccl-cu13 wheel that python3 names"
else
  fail "the wheel was not found: $(grep -E "nccl_probe|Error" "$work/probe.log")"
fi
exit $failed
