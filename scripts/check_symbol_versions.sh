#!/usr/bin/env bash
# Whether binaries and shared libraries can load under a given glibc and libstdc++: the highest
# GLIBC_x.y and GLIBCXX_3.4.z symbol versions they ask for must not pass the given ones.
#
#   scripts/check_symbol_versions.sh GLIBC GLIBCXX FILE...
#     e.g. scripts/check_symbol_versions.sh 2.39 3.4.33 bin/* lib/*
#
# Prints "needs glibc X, GLIBCXX_Y" and exits 0, or names the first file that needs more and exits
# 1. scripts/gpu_bundle.sh checks the bundle against the device's versions with it.
set -euo pipefail
(($# >= 3)) || { echo "usage: check_symbol_versions.sh GLIBC GLIBCXX FILE..." >&2; exit 2; }
max_glibc=$1 max_glibcxx=$2
shift 2

highest() {  # highest PREFIX FILE: the highest PREFIX_version FILE needs, or 0
  { objdump -T "$2" 2>/dev/null || true; } | { grep -o "${1}_[0-9][0-9.]*" || true; } | sed "s/^${1}_//" | sort -V | tail -1
}
at_most() { [[ $(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1) == "$2" ]]; }

need_glibc=0 need_glibcxx=0
for file in "$@"; do
  [[ -f $file ]] || { echo "check_symbol_versions: $file: no such file" >&2; exit 2; }
  glibc=$(highest GLIBC "$file")
  glibcxx=$(highest GLIBCXX "$file")
  at_most "${glibc:-0}" "$max_glibc" ||
    { echo "check_symbol_versions: $file needs glibc $glibc (at most $max_glibc)" >&2; exit 1; }
  at_most "${glibcxx:-0}" "$max_glibcxx" ||
    { echo "check_symbol_versions: $file needs GLIBCXX_$glibcxx (at most $max_glibcxx)" >&2; exit 1; }
  at_most "${glibc:-0}" "$need_glibc" || need_glibc=$glibc
  at_most "${glibcxx:-0}" "$need_glibcxx" || need_glibcxx=$glibcxx
done
echo "needs glibc $need_glibc, GLIBCXX_$need_glibcxx"
