#!/usr/bin/env bash
# The dependency direction of docs/ARCHITECTURE.md, "Layout": apps -> train -> models, optim,
# data -> kernels -> engine. Every `#include "<dir>/..."` in a library directory must name a
# directory it may depend on; one that climbs back up (train/ or models/ into apps/, kernels/ into
# models/, ...) fails with its file and line. Usage: include_direction_test.sh SOURCE_DIR
set -uo pipefail
root=${1:?usage: include_direction_test.sh SOURCE_DIR}
declare -A allowed=(
  [engine]="engine"
  [kernels]="engine kernels"
  [models]="engine kernels models"
  [optim]="engine kernels optim"
  [data]="engine kernels data"
  [train]="engine kernels models optim data train"
)
status=0
for dir in "${!allowed[@]}"; do
  [[ -d "$root/$dir" ]] || { echo "FAIL: $root/$dir is missing"; exit 1; }
  while IFS=: read -r file line text; do
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$text")
    if [[ " ${allowed[$dir]} " != *" $target "* ]]; then
      echo "FAIL: ${file#"$root"/}:$line: $dir/ includes $target/ (it may include ${allowed[$dir]})"
      status=1
    fi
  done < <(grep -rnE '^#include "(engine|kernels|models|optim|data|train|apps)/' "$root/$dir" \
             --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh')
done
exit $status
