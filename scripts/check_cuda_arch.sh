#!/usr/bin/env bash
# check_cuda_arch.sh LIBRARY ARCH...: every CUDA object in LIBRARY must carry real machine code
# (an ELF cubin) for each ARCH (e.g. 80 90), so no GPU of those generations needs PTX JIT.
# Exit 77 (skipped) when cuobjdump cannot be found (scripts/test.sh counts that as a failure).
# check_cuda_arch.sh --find: prints the cuobjdump it would use, or exits 1 when there is none
# (scripts/setup.sh asks before it installs one).
set -euo pipefail

# On the PATH, beside nvcc, in /usr/local/cuda/bin, then in the python3 on the PATH: NVIDIA's
# nvidia-cuda-cuobjdump wheel (nvidia/cu13/bin) or the copy that triton's package carries (found
# without importing either package).
find_cuobjdump() {
  local nvcc tool
  nvcc=$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
  for tool in "$(command -v cuobjdump 2>/dev/null)" "$(dirname "$nvcc")/cuobjdump" \
    /usr/local/cuda/bin/cuobjdump; do
    [[ -n $tool && -x $tool ]] && echo "$tool" && return 0
  done
  python3 - <<'PY' 2>/dev/null
import glob, importlib.util, os
places = (("nvidia", "cu*/bin/cuobjdump"), ("triton", "backends/nvidia/bin/cuobjdump"))
for package, pattern in places:
    spec = importlib.util.find_spec(package)
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            if os.access(path, os.X_OK):
                print(path)
                raise SystemExit(0)
raise SystemExit(1)
PY
}

if [[ ${1:-} == --find ]]; then
  find_cuobjdump || exit 1
  exit 0
fi
lib=$1
shift
tool=$(find_cuobjdump) || { echo "skipped: cuobjdump not found (scripts/setup.sh installs it)"; exit 77; }
echo "cuobjdump: $tool"
listing=$("$tool" --list-elf "$lib")
objects=$(grep -c '^member .*\.cu\.o:' <<<"$listing" || true)
[[ $objects -gt 0 ]] || { echo "FAIL: no CUDA objects in $lib"; exit 1; }
status=0
for arch in "$@"; do
  arch=${arch%%-*}
  found=$(grep -c "\.sm_${arch}\.cubin" <<<"$listing" || true)
  if [[ $found -lt $objects ]]; then
    echo "FAIL: $found sm_${arch} cubins for $objects CUDA objects in $lib"
    status=1
  else
    echo "ok: sm_${arch} machine code in all $objects CUDA objects"
  fi
done
exit $status
