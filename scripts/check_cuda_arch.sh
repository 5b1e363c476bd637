#!/usr/bin/env bash
# check_cuda_arch.sh LIBRARY ARCH...: every CUDA object in LIBRARY must carry real machine code
# (an ELF cubin) for each ARCH (e.g. 80 90), so no GPU of those generations needs PTX JIT.
# Exit 77 (skipped) when cuobjdump cannot be found.
set -euo pipefail
lib=$1
shift
find_cuobjdump() {
  command -v cuobjdump && return
  for dir in "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")" \
    /usr/local/cuda/bin; do
    [[ -x "$dir/cuobjdump" ]] && echo "$dir/cuobjdump" && return
  done
  python3 - <<'PY' 2>/dev/null
import glob, os, nvidia
for root in nvidia.__path__:
    for path in glob.glob(os.path.join(root, "cu*", "bin", "cuobjdump")):
        print(path); raise SystemExit
raise SystemExit(1)
PY
}
tool=$(find_cuobjdump) || { echo "skipped: cuobjdump not found (scripts/setup.sh installs it)"; exit 77; }
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
