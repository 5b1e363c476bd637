#!/usr/bin/env bash
# Makes the python3 that the project calls (the first on the PATH: scripts/plot_metrics.py, the
# e2e tests, the HF fixture checks) able to import what they need, whatever Python it is:
#   matplotlib                       metrics.png after pre-training (scripts/plot_metrics.py)
#   torch, transformers, safetensors the HF fixture and export checks (test/fixtures/*.py);
#                                    large (torch brings its CUDA libraries): skipped with
#                                    ELECTRA_SETUP_HF=0
# Debian's own python3 (/usr/bin/python3) gets matplotlib from Debian (python3-matplotlib, in
# setup.sh's package list) and the HF packages with pip --user (--break-system-packages: Debian
# marks its Python externally managed). Any other python3 (pyenv, a venv, conda) gets pip: inside
# a virtual environment into it, else with --user.
# --dry-run prints the install commands instead of running them. [--dry-run] --install PACKAGE...
# installs only those, the same way (scripts/setup.sh: NVIDIA's NCCL and cuobjdump wheels).
set -euo pipefail

dry_run=0
if [[ "${1:-}" == "--dry-run" ]]; then
  dry_run=1
  shift
fi
install_only=()
[[ "${1:-}" == "--install" ]] && install_only=("${@:2}")
run() {
  if ((dry_run)); then echo "would run: $*"; else "$@"; fi
}

PY="$(command -v python3 || true)"
if [[ -z "$PY" ]]; then
  echo "setup_python: error: no python3 on the PATH" >&2
  exit 1
fi
can_import() { "$PY" -c "import $1" >/dev/null 2>&1; }
debian_python=0
[[ "$(readlink -f "$PY")" == /usr/bin/python3* ]] && debian_python=1
in_venv="$("$PY" -c 'import sys; print(int(sys.prefix != sys.base_prefix))' 2>/dev/null || echo 0)"

pip_install() {
  local flags=(-m pip install -q)
  if ((debian_python)); then
    flags+=(--user --break-system-packages)
  elif [[ "$in_venv" != 1 ]]; then
    flags+=(--user)
  fi
  run "$PY" "${flags[@]}" "$@"
}

if ((${#install_only[@]})); then
  pip_install "${install_only[@]}"
  exit 0
fi

echo "setup_python: python3 is $PY ($("$PY" --version 2>&1))"
if can_import matplotlib; then
  echo "setup_python: matplotlib: present"
elif ((debian_python)); then
  echo "setup_python: error: Debian's python3 lacks matplotlib; run scripts/setup.sh (python3-matplotlib)" >&2
  exit 1
else
  pip_install matplotlib
fi

if [[ "${ELECTRA_SETUP_HF:-1}" == 0 ]]; then
  echo "setup_python: HF packages skipped (ELECTRA_SETUP_HF=0): the HF fixture checks will skip"
elif can_import "torch, transformers, safetensors"; then
  echo "setup_python: torch, transformers, safetensors: present"
else
  pip_install torch transformers safetensors numpy
fi
