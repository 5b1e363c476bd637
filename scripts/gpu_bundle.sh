#!/usr/bin/env bash
# Builds the GPU bundle HERE for a device machine that has the NVIDIA driver, CUDA's libraries and
# python, but none of the project's Debian libraries and no package manager (docs/GPU.md): every
# GPU test, every benchmark, train_step and the electra CLI, built by the gpu-bundle preset (sm_90
# machine code, Release, x86-64-v3 host code, no MPI, libstdc++ linked dynamically), stripped, with
# the shared libraries the device lacks copied beside them, packed as one tar.xz under carry/ (a
# git-ignored folder the device tool can carry). scripts/gpu_check.sh unpacks and runs it from any
# directory; nothing in it depends on where this checkout is.
#
#   scripts/gpu_bundle.sh [--data none|glue|enwiki|both] [--out FILE] [--arch 90] [--jobs N]
#     --data   what data to pack beside the binaries (default enwiki): the BERT uncased vocabulary
#              and the five GLUE tasks of ../shared/data/glue always (except with none), plus the
#              enwiki part (13 MB) or both corpora (33 MB) of ../shared/data/corpus
#     --out    the archive (default carry/gpu-bundle.tar.xz)
#     --arch   the GPU's compute capability, machine code only (default 90: H100 and H200; 80: A100)
#
# The device's limits the bundle is checked against (read on the device, 2026-11-26): glibc 2.39,
# libstdc++ up to GLIBCXX_3.4.33 (Ubuntu 24.04); cudart is linked statically; cuBLAS/cuBLASLt 13
# and NCCL come from the device's python packages (gpu_check.sh puts them on the library path of
# our binaries only). The carried tree must stay under 64 MiB with the checkout: the script fails
# when the archive and the checkout's files come within 4 MiB of it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
data=enwiki
out=carry/gpu-bundle.tar.xz
jobs=$(nproc)
arch=90
while (($#)); do
  case $1 in
    --data) data=${2:?--data needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a value}; shift 2 ;;
    --arch) arch=${2:?--arch needs a value}; shift 2 ;;
    *) echo "gpu_bundle.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ $arch =~ ^[0-9]+a?$ ]] || { echo "gpu_bundle.sh: --arch takes a compute capability such as 90 or 80, not '$arch'" >&2; exit 2; }
case $data in none | glue | enwiki | both) ;; *)
  echo "gpu_bundle.sh: --data must be none, glue, enwiki or both, not '$data'" >&2; exit 2 ;;
esac
shared=$root/../shared/data
if [[ $data != none && ! -d $shared ]]; then
  echo "gpu_bundle.sh: --data $data needs ../shared/data, which is not here (use --data none)" >&2
  exit 2
fi

build=build/gpu-bundle
cmake --preset gpu-bundle -DCMAKE_CUDA_ARCHITECTURES="$arch-real" >/dev/null
# GPU tests are ctest entries per case (NAME:case), one executable each NAME.
targets=$(ctest --test-dir "$build" -L gpu -N | sed -n 's/^ *Test *#[0-9]*: *\([^ :]*\).*/\1/p' | sort -u)
for source in bench/*_bench.cu; do targets+=" $(basename "$source" .cu)"; done
targets+=" train_step electra"
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $targets

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for target in $targets; do
  file=$(find "$build" -type f -name "$target" -perm -u+x | head -1)
  [[ -n $file ]] || { echo "gpu_bundle.sh: built target '$target' not found in $build" >&2; exit 1; }
  strip -o "$stage/bin/$target" "$file"
done

# Shared libraries: the C/C++ runtime and CUDA's libraries are on the device; the rest travels.
on_device='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.'
for bin in "$stage"/bin/*; do
  ldd "$bin" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $on_device ]] || cp -L "$path" "$stage/lib/$name"
done

# The device's glibc and libstdc++ bound the symbol versions our binaries may ask for.
needs=$(scripts/check_symbol_versions.sh 2.39 3.4.33 "$stage"/bin/* "$stage"/lib/*)

# The presets, where `electra` looks for a default config beside an installed binary
# (apps/default_config.h), so that --config may be left out wherever the bundle is unpacked.
mkdir -p "$stage/share/electra-engine"
cp -r configs "$stage/share/electra-engine/"

if [[ $data != none ]]; then
  mkdir -p "$stage/data/vocab" "$stage/data/glue" "$stage/data/corpus"
  cp "$shared/vocab/bert-base-uncased-vocab.txt" "$stage/data/vocab/"
  for task in CoLA SST-2 MRPC STS-B RTE; do cp -r "$shared/glue/$task" "$stage/data/glue/"; done
  case $data in
    enwiki) cp "$shared/corpus/enwiki-2019-part00.txt.zst" "$stage/data/corpus/" ;;
    both) cp "$shared"/corpus/*.txt.zst "$stage/data/corpus/" ;;
  esac
fi

{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), preset gpu-bundle (sm_$arch, Release)"
  echo "$needs"
  echo "data $data"
  (cd "$stage" && find bin lib share data -type f 2>/dev/null | sort)
} >"$stage/MANIFEST"

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -T0 -6 >"$out.tmp"
mv "$out.tmp" "$out"
bytes=$(stat -c %s "$out")
echo "gpu_bundle.sh: $out: $((bytes / 1024 / 1024)) MiB ($(ls "$stage/bin" | wc -l) binaries," \
  "$(ls "$stage/lib" | wc -l) libraries, data $data; $needs)"
# Everything that travels (the checkout's files and what is carried) must stay under 64 MiB.
checkout=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
limit=$((64 * 1024 * 1024 - checkout - 4 * 1024 * 1024))
if ((bytes > limit)); then
  echo "gpu_bundle.sh: $out and the checkout ($((checkout / 1024 / 1024)) MiB) pass the 64 MiB" \
    "a device call carries (4 MiB kept spare): take less --data" >&2
  exit 1
fi
