#!/usr/bin/env bash
# Data-parallel `electra pretrain` under mpirun on the CPU (MPI backend), with a shrunken
# electra-tiny:
#   - 2 ranks x 1 micro-batch of 4 equal 1 process x 2 micro-batches of 4 (the same global
#     batch of 8): losses of all 20 updates within 1e-6 relative, parameters and optimizer
#     moments within 1e-5 (normwise per tensor; test/dist/compare_runs.py says why);
#   - rank 0 alone writes metrics.jsonl and checkpoints; the start names world size and backend;
#   - 1 rank resumed at update 10 from the 2-rank checkpoint continues identically, and says how
#     it keeps the global batch;
#   - a rank killed during training, a rank that fails (bad --resume) and ranks started with
#     different configs end the job with a message within 60 s; a SIGTERM to one rank stops
#     every rank at the same update with a checkpoint (exit 0);
#   - a global batch that the ranks cannot split is one error line.
# Usage: dist_e2e.sh MPIEXEC ELECTRA_BINARY SOURCE_DIR
set -uo pipefail
mpiexec="$1"
electra="$2"
src="$3"
source "$src/test/common/e2e_common.sh"
compare() { python3 "$src/test/dist/compare_runs.py" "$@"; }
mpi=("$mpiexec" --oversubscribe)

make_tiny_data

# Dropout on (the tiny preset's 0.1): masks must follow the global micro-batch too.
small=(--config "$src/configs/electra-tiny.yaml"
  --set data.shards="$work/shards" --set data.vocab="$work/vocab.txt"
  --set model.hidden=64 --set model.ffn=256 --set model.embedding_size=32
  --set train.seq_len=64 --set train.batch_size=8 --set train.micro_batch_size=4
  --set train.device=cpu --set train.steps=20 --set distributed.bucket_mb=0.05
  --set logging.every=1 --set checkpoint.every=1 --set checkpoint.keep=0)

# 1. Two ranks equal one process with accumulation.
"$electra" pretrain "${small[@]}" --set checkpoint.dir="$work/single" >"$work/single.log" 2>&1 ||
  fail "single-process run: $(tail -2 "$work/single.log")"
"${mpi[@]}" -np 2 "$electra" pretrain "${small[@]}" --set checkpoint.dir="$work/dist" \
  >"$work/dist.log" 2>&1 || fail "2-rank run: $(tail -5 "$work/dist.log")"
if compare "$work/dist" "$work/single" --steps 1 20 --loss-tol 1e-6 --param-tol 1e-5; then
  pass "2 ranks x 1 micro-batch == 1 process x 2 micro-batches"
else
  fail "2 ranks differ from 1 process with accumulation"
fi
if grep -q "world size 2, backend mpi; global batch 8 = 2 ranks x 1 micro-batch x 4 sequences" \
  "$work/dist.log" && grep -q "rank 1 of 2 (local rank 1 on .*), backend mpi: device CPU" \
  "$work/dist.log" && grep -q "gradients all-reduced in [0-9]* buckets" "$work/dist.log"; then
  pass "the start names world size, backend and each rank's device"
else
  fail "start lines: $(grep "^pretrain: " "$work/dist.log" | head -5)"
fi
rows="$(wc -l <"$work/dist/metrics.jsonl")"
progress="$(grep -c "^step " "$work/dist.log")"
if [[ $rows -eq 20 && $progress -eq 20 ]]; then
  pass "rank 0 alone logs (20 metrics rows, 20 progress lines)"
else
  fail "metrics rows $rows, progress lines $progress (expected 20 and 20)"
fi

# 2. One rank resumes the 2-rank checkpoint of update 10 and continues identically.
mkdir -p "$work/resumed" && cp -r "$work/dist/checkpoint-00000010" "$work/resumed/"
"$electra" pretrain "${small[@]}" --set checkpoint.dir="$work/resumed" --resume "$work/resumed" \
  >"$work/resumed.log" 2>&1 || fail "resume on 1 rank: $(tail -2 "$work/resumed.log")"
if compare "$work/resumed" "$work/dist" --steps 11 20 --loss-tol 1e-6 --param-tol 1e-5 &&
  grep -q "written by 2 ranks x 1 micro-batch per update; now 1 rank x 2 micro-batches of 4 \
sequences: the global batch stays 8" "$work/resumed.log"; then
  pass "1 rank resumes a 2-rank checkpoint and continues identically"
else
  fail "resume on 1 rank: $(grep "checkpoint was" "$work/resumed.log")"
fi

# 3. Failures end the job with a message within 60 s.
long=("${small[@]}" --set train.steps=100000 --set checkpoint.every=0)
expect_failure() {  # expect_failure NAME LOG PATTERN START_SECONDS RC
  local name="$1" log="$2" pattern="$3" start="$4" rc="$5"
  local elapsed=$((SECONDS - start))
  if [[ $rc -ne 0 && $rc -ne 124 && $elapsed -lt 60 ]] && grep -q "$pattern" "$log"; then
    pass "$name (exit $rc after ${elapsed}s)"
  else
    fail "$name: exit $rc after ${elapsed}s: $(grep -v "^step" "$log" | tail -8)"
  fi
}

# signal_rank1 SIGNAL DIR: waits up to 90 s for the job checkpointing into DIR to log its first
# update (its start may take long on a loaded machine: the whole suite runs beside it), then sends
# SIGNAL to its rank 1, looking again for up to 10 s; status 1 if never found.
signal_rank1() {
  local signal=$1 dir=$2 pid
  for _ in $(seq 1 900); do
    [[ -s "$dir/metrics.jsonl" ]] && break
    sleep 0.1
  done
  for _ in $(seq 1 50); do
    for pid in $(pgrep -f "checkpoint.dir=$dir"); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
        kill "-$signal" "$pid" && return 0
      fi
    done
    sleep 0.2
  done
  return 1
}

# The kill: the job must end within 60 s of it (timed from the kill, not from the start).
timeout 240 "${mpi[@]}" -np 2 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/kill" \
  >"$work/kill.log" 2>&1 &
job=$!
signal_rank1 KILL "$work/kill" || fail "could not find rank 1 to kill"
start=$SECONDS
wait "$job"
expect_failure "a killed rank ends the job" "$work/kill.log" "rank 1 .*exited on signal 9" \
  "$start" $?

start=$SECONDS
timeout 90 "${mpi[@]}" -np 1 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/throw" \
  : -np 1 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/throw" \
  --resume "$work/nowhere" >"$work/throw.log" 2>&1
expect_failure "a rank that fails aborts the job" "$work/throw.log" \
  "electra pretrain: rank 1 of 2: error: .*nowhere: no such checkpoint" "$start" $?

start=$SECONDS
timeout 90 "${mpi[@]}" -np 1 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/mix" \
  : -np 1 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/mix" \
  --set optimizer.lr=3e-3 >"$work/mix.log" 2>&1
expect_failure "different configs are refused at start" "$work/mix.log" \
  "the ranks disagree with rank 0: the configuration (config file or --set) differs on 1 of 2" \
  "$start" $?

# 4. SIGTERM to one rank: every rank stops at the same update, rank 0 saves, exit 0. Rank 1 is
# found as for the kill above (signal_rank1) and the job is bounded. (Once, under the suite's
# load, this step ran to the ctest timeout with every check before it passed. With one look for
# rank 1 and no bound, a missed look would leave the job running its 100000 updates; the log
# could not say whether that was it. Now a missed look is retried, and a job that hangs after
# the signal ends with exit 124, named below.)
timeout 150 "${mpi[@]}" -np 2 "$electra" pretrain "${long[@]}" --set checkpoint.dir="$work/term" \
  >"$work/term.log" 2>&1 &
job=$!
signal_rank1 TERM "$work/term" || { fail "could not find rank 1 to signal"; kill "$job"; }
wait "$job"
rc=$?
if [[ $rc -eq 0 ]] && grep -q "SIGTERM received at update [0-9]* (by 1 of 2 ranks)" \
  "$work/term.log" && ls -d "$work"/term/checkpoint-* >/dev/null 2>&1; then
  pass "SIGTERM on one rank stops all at one update with a checkpoint"
else
  fail "SIGTERM: exit $rc: $(grep -v "^step" "$work/term.log" | tail -4)"
fi

# 5. A global batch the ranks cannot split.
"${mpi[@]}" -np 2 "$electra" pretrain "${small[@]}" --set train.micro_batch_size=8 \
  --set checkpoint.dir="$work/split" >"$work/split.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q "train.batch_size 8 is not a multiple of train.micro_batch_size 8 x 2 \
ranks" "$work/split.log"; then
  pass "an unsplittable global batch is refused"
else
  fail "unsplittable batch: exit $rc: $(tail -3 "$work/split.log")"
fi

if ((failures == 0)); then echo "all checks passed"; else echo "$failures checks failed"; fi
exit $((failures > 0))
