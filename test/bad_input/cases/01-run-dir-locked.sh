# Two runs writing the same checkpoint directory. The second is refused while
# the first holds the run directory, with the holder's PID.
setup() {
  "$electra" pretrain --config tiny.yaml --set train.steps=1000000 --set checkpoint.every=0 \
    --set logging.every=1000000 --set checkpoint.dir=held >held.log 2>&1 &
  holder=$!
  for _ in $(seq 1 200); do [[ -e held/metrics.jsonl ]] && break; sleep 0.05; done
  [[ -e held/metrics.jsonl ]]
}
teardown() { kill -9 "$holder"; wait "$holder" 2>/dev/null; }
cmd=(pretrain --config tiny.yaml --set checkpoint.dir=held)
names=("held: in use by another run (PID ")
check() { grep -q "PID $holder," .case/stderr || { echo "the holder's PID $holder is not named"; return 1; }; }
