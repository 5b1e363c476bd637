# Item 11: `step: 1e15` in trainer_state.json was accepted and wrote
# checkpoint-1000000000000000 with exit 0.
setup() { json_set run/checkpoint-00000002/trainer_state.json step 1e15; }
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/trainer_state.json "step")
