# Item 11: SQuAD answer_start 45.7 was read as 45.
setup() { json_set squad/train-v1.1.json answer_start 45.7; }
cmd=(finetune --task squad1.1 --data-dir squad --init run --output sq --set finetune.device=cpu)
names=(squad/train-v1.1.json "answer_start" "45.7")
