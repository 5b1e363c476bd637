# Item 2: `predict` refuses a fine-tuned model with a non-finite weight.
setup() { nan_into ft/best/model.safetensors; }
cmd=(predict --task sst-2 --data-dir sst2 --checkpoint ft/best --output pred
  --set finetune.device=cpu --set finetune.max_seq_len=16)
names=(ft/best/model.safetensors "non-finite")
