# Item 10: a directory in place of the optimizer state ("file of 9223372036854775807 bytes").
setup() {
  rm run/checkpoint-00000002/trainer_state.safetensors
  mkdir run/checkpoint-00000002/trainer_state.safetensors
}
cmd=(pretrain --config tiny.yaml --resume run)
names=("trainer_state.safetensors: is a directory")
