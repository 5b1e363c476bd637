# Item 2: a resumed trainer state whose optimizer moments hold a NaN is refused on load (it
# would be saved as NaN weights with exit 0).
setup() { nan_into run/checkpoint-00000002/trainer_state.safetensors; }
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/trainer_state.safetensors "non-finite")
