# Item 3: a shard added under the run's shard directory after the build (the resumed run would
# read other data than the uninterrupted one).
setup() { cp shards/shard-00000.bin shards/shard-00001.bin; }
cmd=(pretrain --config tiny.yaml --resume run)
names=("shards: shard-00001.bin is not in manifest.json")
