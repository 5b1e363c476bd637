# Item 10: a complex YAML key (`? [a, b]`) escaped as YAML::TypedBadConversion (internal error).
setup() { printf '? [a, b]\n: 1\n' >>tiny.yaml; }
cmd=(pretrain --config tiny.yaml --set checkpoint.dir=fresh)
names=("tiny.yaml:" "keys must be plain names")
