# Item 5: model sizes are bounded before any size is computed from them (4 x hidden overflows an
# int at hidden = 2^30).
cmd=(pretrain --config tiny.yaml --set model.hidden=1073741824 --set checkpoint.dir=fresh)
names=("model.hidden must be in [1, ")
