#!/usr/bin/env bash
# Installs every system dependency of electra-engine from Debian's packages (bookworm or newer).
# Idempotent: packages already present are left alone. Works as root or through sudo.
# The CUDA toolkit is not a Debian dependency: when nvcc is present (PATH or /usr/local/cuda/bin)
# the CUDA build is enabled, and cuobjdump and NCCL are installed from NVIDIA's wheels where the
# machine lacks them; otherwise the CPU-only build is used.
set -euo pipefail

# Tested with Debian 12 (bookworm): cmake 3.25, catch2 2.13.10, eigen 3.4.0, yaml-cpp 0.7.0,
# utf8proc 2.8.0, nlohmann-json 3.11.2, zstd 1.5.4, openmpi 4.1.4. Minimum versions we rely on:
declare -A MIN_VERSION=([cmake]=3.24 [catch2]=2.13 [libeigen3-dev]=3.4 [nlohmann-json3-dev]=3.10)

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format
  python3 python3-pip python3-matplotlib
  dict-gcide  # English text for the demo and the e2e tests when ../shared is absent
  catch2 libeigen3-dev libyaml-cpp-dev libutf8proc-dev nlohmann-json3-dev libzstd-dev zstd
  libopenmpi-dev openmpi-bin
)

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null; then
  SUDO=(sudo)
else
  echo "setup.sh: error: run as root or install sudo" >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup.sh: installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup.sh: installed ${#missing[@]} package(s)"
else
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed"
fi

# The fuzz harnesses (test/fuzz) need clang with libFuzzer; scripts/test.sh skips them without.
FUZZ_PACKAGES=(clang libclang-rt-dev)
fuzz_missing=()
for pkg in "${FUZZ_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || fuzz_missing+=("$pkg")
done
if ((${#fuzz_missing[@]})); then
  echo "setup.sh: installing for the fuzz harnesses: ${fuzz_missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${fuzz_missing[@]}" >/dev/null || echo "setup.sh: note: no clang/libFuzzer; fuzzing is skipped"
fi

for pkg in "${!MIN_VERSION[@]}"; do
  have=$(dpkg-query -W -f='${Version}' "$pkg")
  if ! dpkg --compare-versions "$have" ge "${MIN_VERSION[$pkg]}"; then
    echo "setup.sh: error: $pkg $have is older than the required ${MIN_VERSION[$pkg]}" >&2
    exit 1
  fi
done

# The python3 on the PATH may not be Debian's (pyenv, a venv): make it import what the project
# calls it for (matplotlib, and the HF packages of the fixture checks).
"$(dirname "$0")/setup_python.sh"

NVCC=$(command -v nvcc || true)
[[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
if [[ -z "$NVCC" ]]; then
  echo "setup.sh: CUDA will NOT be built (nvcc not found): CPU-only build"
  exit 0
fi
echo "setup.sh: CUDA will be built ($("$NVCC" --version | tail -1), sm_80 and sm_90)"
here="$(dirname "$0")"

# cuobjdump proves the objects hold sm_80/sm_90 machine code (test cuda_architectures; test.sh
# fails when it is skipped). Looked for as that test looks for it: the binary itself, wherever it
# is; toolkits installed without it get NVIDIA's wheel.
if tool=$("$here/check_cuda_arch.sh" --find); then
  echo "setup.sh: cuobjdump: $tool"
else
  "$here/setup_python.sh" --install "nvidia-cuda-cuobjdump==13.2.51" || true
  if tool=$("$here/check_cuda_arch.sh" --find); then
    echo "setup.sh: cuobjdump: installed $tool"
  else
    echo "setup.sh: note: could not install cuobjdump; the cuda_architectures test will be skipped"
  fi
fi

# NCCL carries the all-reduce between GPUs (several GPUs only; the toolkit does not ship it).
# Asked the way the build asks (cmake/nccl_probe runs cmake/FindNCCL.cmake); where it finds none,
# NVIDIA's NCCL wheel goes into the python3 on the PATH, where the build finds it.
nccl_probe() {
  local dir
  dir="$(mktemp -d)"
  cmake -S "$here/../cmake/nccl_probe" -B "$dir" \
    -DCUDAToolkit_ROOT="$(dirname "$(dirname "$NVCC")")" 2>/dev/null | sed -n 's/^-- nccl_probe: //p'
  rm -rf "$dir"
}
nccl=$(nccl_probe)
if [[ $nccl != found=TRUE* ]]; then
  # The wheel for the toolkit's major version: nvidia-nccl-cu13, or -cu12 for CUDA 12.
  cuda_major=$("$NVCC" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  echo "setup.sh: installing NCCL (nvidia-nccl-cu$cuda_major) for training on several GPUs"
  "$here/setup_python.sh" --install "nvidia-nccl-cu$cuda_major==2.30.7" || true
  nccl=$(nccl_probe)
fi
if [[ $nccl == found=TRUE* ]]; then
  echo "setup.sh: NCCL: ${nccl#found=TRUE }"
else
  echo "setup.sh: note: no NCCL: the build trains on one GPU (several GPU ranks stop, saying so)"
fi
