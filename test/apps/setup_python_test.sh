#!/usr/bin/env bash
# scripts/setup_python.sh chooses how to install into the python3 on the PATH: a
# python3 that is not Debian's and lacks matplotlib gets `pip install --user matplotlib`, inside a
# venv without --user; one that has everything gets nothing. Fake python3 executables stand in
# for the real ones (--dry-run: nothing is installed).
# Usage: setup_python_test.sh SOURCE_DIR
set -uo pipefail
src="$1"
electra=unused
source "$src/test/common/e2e_common.sh"

# fake_python DIR IMPORTS_OK IN_VENV: a python3 whose imports fail unless IMPORTS_OK is 1.
fake_python() {
  mkdir -p "$1"
  cat >"$1/python3" <<SH
#!/bin/sh
case "\$2" in
  *sys.prefix*) echo $3 ;;
  import*) exit \$((1 - $2)) ;;
esac
[ "\$1" = --version ] && echo "Python 3.11.7 (fake)"
exit 0
SH
  chmod +x "$1/python3"
}

fake_python "$work/bare" 0 0
out="$(PATH="$work/bare:$PATH" "$src/scripts/setup_python.sh" --dry-run 2>&1)"
grep -q "would run: $work/bare/python3 -m pip install -q --user matplotlib" <<<"$out" &&
  grep -q "pip install -q --user torch transformers safetensors" <<<"$out" &&
  pass "a pyenv-like python3 gets pip --user" || fail "bare: $out"

fake_python "$work/venv" 0 1
out="$(PATH="$work/venv:$PATH" "$src/scripts/setup_python.sh" --dry-run 2>&1)"
grep -q "would run: $work/venv/python3 -m pip install -q matplotlib" <<<"$out" &&
  pass "a venv's python3 gets pip without --user" || fail "venv: $out"

fake_python "$work/full" 1 0
out="$(PATH="$work/full:$PATH" "$src/scripts/setup_python.sh" --dry-run 2>&1)"
! grep -q "would run" <<<"$out" && grep -q "matplotlib: present" <<<"$out" &&
  pass "nothing to install when everything imports" || fail "full: $out"

out="$(PATH="$work/bare:$PATH" ELECTRA_SETUP_HF=0 "$src/scripts/setup_python.sh" --dry-run 2>&1)"
! grep -q "would run.*torch" <<<"$out" && grep -q "HF packages skipped" <<<"$out" &&
  pass "ELECTRA_SETUP_HF=0 skips the HF packages" || fail "no-hf: $out"

# --install: those packages alone, installed the same way (scripts/setup.sh's NVIDIA wheels).
out="$(PATH="$work/bare:$PATH" "$src/scripts/setup_python.sh" --dry-run --install \
  nvidia-nccl-cu13==2.30.7 2>&1)"
[[ $out == "would run: $work/bare/python3 -m pip install -q --user nvidia-nccl-cu13==2.30.7" ]] &&
  pass "--install installs only the packages named" || fail "install: $out"
((failures == 0)) || exit 1
echo "all passed"
