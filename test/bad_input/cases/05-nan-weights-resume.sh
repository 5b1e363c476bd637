# Item 2: a pre-training checkpoint whose discriminator holds a NaN is refused on resume.
setup() { nan_into run/checkpoint-00000002/discriminator/model.safetensors; }
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/discriminator/model.safetensors "non-finite")
