# Item 10: a directory in place of a model's config.json.
setup() {
  cp -r run/checkpoint-00000002/discriminator model
  rm model/config.json
  mkdir model/config.json
}
cmd=(finetune --task sst-2 --data-dir sst2 --init model --output out --set finetune.device=cpu)
names=("model/config.json: is a directory")
