# Item 11: SQuAD answer_start 4294967341 was read as 45 (truncated to 32 bits).
setup() { json_set squad/train-v1.1.json answer_start 4294967341; }
cmd=(finetune --task squad1.1 --data-dir squad --init run --output sq --set finetune.device=cpu)
names=(squad/train-v1.1.json "answer_start" "4294967341")
