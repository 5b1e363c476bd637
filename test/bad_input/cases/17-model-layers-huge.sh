# Item 9: `model.layers: 200000` grew memory for minutes on main; sizes are bounded first.
cmd=(pretrain --config tiny.yaml --set model.layers=200000 --set checkpoint.dir=fresh)
names=("model.layers must be in [1, ")
limit=10
