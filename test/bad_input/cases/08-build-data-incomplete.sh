# Item 3: a shard directory whose build-data was killed before it wrote manifest.json.
setup() { rm shards/manifest.json; }
cmd=(pretrain --config tiny.yaml --set checkpoint.dir=fresh)
names=("shards: no manifest.json")
