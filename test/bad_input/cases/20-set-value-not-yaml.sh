# Item 10: a --set value that is not YAML (`[1`) escaped as a YAML exception.
cmd=(pretrain --config tiny.yaml --set 'train.steps=[1' --set checkpoint.dir=fresh)
names=("--set train.steps=[1" "not valid YAML")
