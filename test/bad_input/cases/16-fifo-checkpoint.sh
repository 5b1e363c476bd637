# Item 8: a FIFO in place of a checkpoint's weights.
setup() {
  rm run/checkpoint-00000002/generator/model.safetensors
  mkfifo run/checkpoint-00000002/generator/model.safetensors
}
cmd=(pretrain --config tiny.yaml --resume run)
names=("generator/model.safetensors: is a FIFO")
limit=10
