# Item 8: a FIFO given as a shard.
setup() { mkfifo pipe.bin; }
cmd=(info pipe.bin)
names=("pipe.bin: is a FIFO")
limit=10
