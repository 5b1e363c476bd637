# Item 2: `eval` refuses a fine-tuned model with a non-finite weight instead of scoring it.
setup() { nan_into ft/best/model.safetensors; }
cmd=(eval --task sst-2 --data-dir sst2 --checkpoint ft/best --set finetune.device=cpu --set finetune.max_seq_len=16)
names=(ft/best/model.safetensors "non-finite")
