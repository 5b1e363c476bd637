# Item 10: a directory given as the config ("missing required key 'data.shards'" on main).
cmd=(pretrain --config shards)
names=("shards: is a directory")
