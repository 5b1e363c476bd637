# The steps of scripts/gpu_check.sh's phases, sourced by it (and by test/apps/gpu_check_test.sh,
# which runs `interrupted` on a stand-in binary). Expects: steps (the steps.tsv file), logs (the
# log folder), bundle (the unpacked bundle) and GPU_CHECK_LIBS (the library path of its binaries).

# record PHASE STEP RESULT SECONDS [NOTE]: one line of steps.tsv. RESULT is an exit code, or
# "not run: why". Lines are short, so parallel appends do not interleave.
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$steps"; }
export -f record

# bin NAME ARGS...: runs one of the bundle's binaries.
bin() {
  local name=$1
  shift
  LD_LIBRARY_PATH="$GPU_CHECK_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bundle/bin/$name" "$@"
}
export -f bin

# left DEADLINE: seconds until DEADLINE (epoch seconds).
left() { echo $(($1 - $(date +%s))); }
export -f left

# step PHASE NAME DEADLINE LIMIT COMMAND...: runs COMMAND with the smaller of LIMIT and what is
# left of the phase, logging to logs/PHASE/NAME.log; records it.
step() {
  local phase=$1 name=$2 deadline=$3 limit=$4
  shift 4
  local remaining
  remaining=$(left "$deadline")
  if ((remaining < 5)); then
    record "$phase" "$name" "not run: the phase's budget was spent" 0
    return 1
  fi
  ((limit > remaining)) && limit=$remaining
  mkdir -p "$logs/$phase"
  local start=$SECONDS
  # Through bash, so that COMMAND may be one of this script's exported functions (bin).
  timeout -k 5 "$limit" bash -c '"$@"' _ "$@" >"$logs/$phase/$name.log" 2>&1
  local rc=$?
  record "$phase" "$name" "$rc" $((SECONDS - start))
  return $rc
}
export -f step

# interrupted PHASE NAME DEADLINE WHEN ARGS...: electra pretrain ARGS, then SIGINT once WHEN
# holds: a number of seconds, or "step N" (the progress line of update N was printed); passes when
# the run saved a checkpoint and exited 0.
interrupted() {
  local phase=$1 name=$2 deadline=$3 when=$4
  shift 4
  mkdir -p "$logs/$phase"
  local start=$SECONDS log=$logs/$phase/$name.log
  # A simple command, not the function bin: in the background a function runs in a subshell, $!
  # is that subshell, and a non-interactive shell's background job ignores SIGINT, so the signal
  # never reached electra (the 2026-11-27 H100 run: the run went on until SIGKILL).
  LD_LIBRARY_PATH="$GPU_CHECK_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bundle/bin/electra" \
    pretrain "$@" >"$log" 2>&1 &
  local pid=$!
  until ! kill -0 "$pid" 2>/dev/null || (($(left "$deadline") < 30)); do
    if [[ $when == step\ * ]]; then
      grep -q "^step ${when#step }/" "$log" && break
    elif ((SECONDS - start >= when)); then
      break
    fi
    sleep 0.2
  done
  # SIGINT every 2 s until the run says it saw one: a background job starts with SIGINT ignored,
  # so a signal that comes before the binary installs its handler is lost (a clean-clone test
  # run under load lost its only one). A second SIGINT is harmless: it asks the same stop.
  local waited=0
  while kill -0 "$pid" 2>/dev/null && ((waited < 60)); do
    ((waited % 4 == 0)) && ! grep -q "SIGINT received" "$log" && kill -INT "$pid" 2>/dev/null
    sleep 0.5
    waited=$((waited + 1))
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
  local rc=$?
  ((rc == 0)) && ! grep -q "SIGINT received" "$log" && rc=98
  record "$phase" "$name" "$rc" $((SECONDS - start))
  return $rc
}

