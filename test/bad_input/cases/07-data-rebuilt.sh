# Item 3: the shard directory rebuilt from other text under the same path: resume is refused and
# the error says what changed.
setup() {
  rm -rf shards
  head -n 150 corpus.txt >half.txt
  "$electra" build-data --input half.txt --vocab vocab.txt --output shards --seq-len 16 2>/dev/null
}
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/trainer_state.json "shard-00000.bin changed" "--init")
