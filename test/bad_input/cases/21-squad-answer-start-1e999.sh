# Item 10: SQuAD `answer_start: 1e999` escaped as nlohmann out_of_range (internal error).
setup() { json_set squad/train-v1.1.json answer_start 1e999; }
cmd=(finetune --task squad1.1 --data-dir squad --init run --output sq --set finetune.device=cpu)
names=(squad/train-v1.1.json)
