# Item 11: a duplicate YAML key (yaml-cpp kept one value silently): both lines are named.
setup() { sed -i 's/^  steps: 4$/  steps: 4\n  steps: 5/' tiny.yaml; }
cmd=(pretrain --config tiny.yaml --set checkpoint.dir=fresh)
names=("tiny.yaml:" "duplicate key 'train.steps' (first on line ")
