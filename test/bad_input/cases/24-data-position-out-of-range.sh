# Item 10: a trainer_state.json whose data_position lies beyond the data (an ExampleOrder check,
# exit 1, on main).
setup() { json_set run/checkpoint-00000002/trainer_state.json data_position 99999999; }
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/trainer_state.json "data_position 99999999")
